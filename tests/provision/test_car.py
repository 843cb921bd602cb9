"""Car configs: composition, overrides and every kind of bad input."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.provision.car import list_cars, load_car
from bench.util.errors import ConfigError


@pytest.fixture
def own_cars(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "cars"
    d.mkdir()
    monkeypatch.setenv("BENCH_CAR_PATH", str(d))
    return d


def test_shipped_cars_are_listed_and_valid() -> None:
    cars = {name: (kind, desc) for name, kind, desc in list_cars()}
    for name in ("defaults", "512mheap", "1gheap", "2gheap", "4gheap", "8gheap", "security", "trial-license",
                 "tcp-compression"):
        assert name in cars, name
        assert cars[name][1], f"{name} has no description"
    assert cars["defaults"][0] == "car"
    assert {k for k, (kind, _) in cars.items() if kind == "car"} == {"defaults"}


def test_defaults_car() -> None:
    car = load_car(["defaults"], {})
    assert car.heap == "1g"
    assert car.heap_options() == ["-Xms1g", "-Xmx1g"]
    assert car.settings["xpack.security.enabled"] is False
    assert car.settings["cluster.routing.allocation.disk.threshold_enabled"] is False
    assert car.settings["action.destructive_requires_name"] is False
    assert car.security is None and car.trial_license is False


def test_composition_overrides_in_order() -> None:
    car = load_car(["defaults", "4gheap", "security", "tcp-compression", "trial-license"], {})
    assert car.heap == "4g"
    assert car.settings["xpack.security.enabled"] is True  # security overrides defaults
    assert car.settings["transport.compress"] is True
    assert car.settings["cluster.routing.allocation.disk.threshold_enabled"] is False  # kept from defaults
    assert car.security is not None and car.security.user == "bench" and car.security.role == "superuser"
    assert car.trial_license is True
    # Later heap mixin wins.
    assert load_car(["defaults", "8gheap", "512mheap"], {}).heap == "512m"


def test_car_params_override_variables() -> None:
    car = load_car(["defaults", "security"], {"security_user": "alice"})
    assert car.security is not None and car.security.user == "alice"


def test_templates_jvm_options_env_and_typed_settings(own_cars: Path) -> None:
    (own_cars / "mine.yml").write_text(
        "type: mixin\ndescription: x\nvariables:\n  replicas: 1\n  gc: G1\n"
        "settings:\n  index.number_of_replicas: '{{ replicas }}'\n  node.attr.rack: 'r{{ replicas }}'\n"
        "jvm_options: ['-XX:+Use{{ gc }}GC']\nenv:\n  FOO: '{{ gc }}'\n")
    (own_cars / "more.yml").write_text("type: mixin\njvm_options: ['-Dx=1']\n")
    car = load_car(["defaults", "mine", "more"], {"replicas": 2})
    assert car.settings["index.number_of_replicas"] == 2  # stays a number
    assert car.settings["node.attr.rack"] == "r2"
    assert car.jvm_options == ["-XX:+UseG1GC", "-Dx=1"]  # appended in order
    assert car.env == {"FOO": "G1"}


def test_unknown_car_names_it_and_lists_available() -> None:
    with pytest.raises(ConfigError) as e:
        load_car(["defaults", "16gheap"], {})
    msg = str(e.value)
    assert "'16gheap'" in msg and "defaults" in msg and "4gheap" in msg and "\n" not in msg


def test_two_cars_is_an_error(own_cars: Path) -> None:
    (own_cars / "other.yml").write_text("type: car\ndescription: another car\nheap: 2g\n")
    with pytest.raises(ConfigError, match=r"2 cars \(defaults, other\)"):
        load_car(["defaults", "other"], {})


def test_only_mixins_is_an_error() -> None:
    with pytest.raises(ConfigError, match="has no car"):
        load_car(["4gheap", "security"], {})


def test_unused_car_param_is_an_error() -> None:
    with pytest.raises(ConfigError) as e:
        load_car(["defaults", "security"], {"securty_user": "bob"})
    assert "securty_user" in str(e.value) and "security_user" in str(e.value)


def test_missing_variable_is_an_error(own_cars: Path) -> None:
    (own_cars / "needs.yml").write_text("type: mixin\nsettings:\n  node.attr.zone: '{{ zone }}'\n")
    with pytest.raises(ConfigError, match="zone"):
        load_car(["defaults", "needs"], {})
    assert load_car(["defaults", "needs"], {"zone": "a"}).settings["node.attr.zone"] == "a"


def test_yaml_syntax_error_names_file_line_and_column(own_cars: Path) -> None:
    bad = own_cars / "broken.yml"
    bad.write_text("type: mixin\nsettings:\n  a: [1, 2\n  b: 3\n")
    with pytest.raises(ConfigError) as e:
        load_car(["defaults", "broken"], {})
    msg = str(e.value)
    assert str(bad) in msg and "line 4" in msg and "column" in msg and "\n" not in msg


def test_validation_error_names_file_and_field(own_cars: Path) -> None:
    (own_cars / "typo.yml").write_text("type: mixin\njvm_option: ['-Dx=1']\n")
    with pytest.raises(ConfigError) as e:
        load_car(["defaults", "typo"], {})
    assert "typo.yml" in str(e.value) and "'jvm_option'" in str(e.value)
    (own_cars / "kind.yml").write_text("type: vehicle\n")
    with pytest.raises(ConfigError, match=r"kind.yml: field 'type'"):
        load_car(["defaults", "kind"], {})


def test_bad_heap_is_rejected(own_cars: Path) -> None:
    (own_cars / "heapy.yml").write_text("type: mixin\nheap: '{{ h }}'\nvariables:\n  h: 1g\n")
    assert load_car(["defaults", "heapy"], {"h": "3g"}).heap == "3g"
    with pytest.raises(ConfigError, match="heap"):
        load_car(["defaults", "heapy"], {"h": "lots"})
