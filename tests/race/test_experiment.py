"""Experiment files and the order of their races (pure: no cluster)."""

from __future__ import annotations

import pytest

from bench.cloud.topology import load_topology
from bench.race.experiment import load_experiment, plan, race_options
from bench.util.bundled import bundled_dir
from bench.util.errors import ConfigError
from tests.support.checkout import ROOT


def _write(tmp_path, text: str):
    p = tmp_path / "exp.yml"
    p.write_text(text)
    return p


BASIC = """
name: demo
repetitions: 3
race: {track: nginx, test-mode: true, target-hosts: "127.0.0.1:9200", track-params: {doc_count: 100}}
variants:
  baseline: {}
  big-bulk: {track-params: {bulk_size: 1000}}
  compressed: {client-options: {http_compress: true}}
"""


def test_interleaved_order_rotates_variants_per_repetition(tmp_path):
    exp = load_experiment(_write(tmp_path, BASIC))
    races = plan(exp, "run1")
    assert [(r.variant, r.repetition) for r in races] == [
        ("baseline", 1), ("big-bulk", 1), ("compressed", 1),
        ("big-bulk", 2), ("compressed", 2), ("baseline", 2),
        ("compressed", 3), ("baseline", 3), ("big-bulk", 3)]


def test_random_order_is_a_seeded_shuffle_of_the_whole_matrix(tmp_path):
    exp = load_experiment(_write(tmp_path, BASIC + "order: random\n"))
    a, b, c = plan(exp, "run1"), plan(exp, "run1"), plan(exp, "run2")
    assert [r.key for r in a] == [r.key for r in b]  # resume sees the same order
    assert sorted(r.key for r in a) == sorted(r.key for r in c) and len(a) == 9
    assert [r.key for r in a] != [r.key for r in c]


def test_race_options_merge_race_track_and_variant_and_tag_each_race(tmp_path):
    exp = load_experiment(_write(tmp_path, BASIC))
    r = next(x for x in plan(exp, "run1") if x.variant == "big-bulk")
    opts = race_options(exp, r, run_id="run1")
    assert opts.track == "nginx" and opts.test_mode and opts.track_params == {"doc_count": 100, "bulk_size": 1000}
    assert opts.user_tags == {"experiment": "demo", "experiment-run": "run1", "variant": "big-bulk",
                              "repetition": "1", "experiment-track": "0"}


@pytest.mark.parametrize("text, message", [
    ("name: x\nvariants: {a: {}}\nbaseline: b\nrace: {track: nginx}\n", "baseline 'b' is not one of"),
    ("name: x\nvariants: {a: {no-such-option: 1}}\nrace: {track: nginx}\n", "variants.a: no-such-option"),
    ("name: x\nvariants: {a: {}}\n", "no track"),
    ("name: x\nvariants: {a: {user-tags: {k: v}}}\nrace: {track: nginx}\n", "set by the experiment itself"),
    ("name: x\nrepetitions: 0\nvariants: {a: {}}\n", "repetitions"),
    ("[1, 2]", "expected a mapping"),
])
def test_bad_experiment_files_are_one_line_errors(tmp_path, text, message):
    with pytest.raises(ConfigError) as e:
        load_experiment(_write(tmp_path, text))
    assert message in str(e.value) and "\n" not in str(e.value) and "exp.yml" in str(e.value)


def test_shipped_example_experiments_load():
    files = sorted((ROOT / "experiments").glob("*.yml"))
    assert files
    for f in files:
        exp = load_experiment(f)
        assert plan(exp, "x")


def test_cli_option_names_are_accepted_as_bench_race_spells_them(tmp_path):
    plugin = tmp_path / "p.zip"
    plugin.write_bytes(b"PK")
    exp = load_experiment(_write(tmp_path, f"""
name: x
race: {{track: nginx, plugin: {plugin}, distribution: "opensearch:2.19.1"}}
variants:
  a: {{}}
  b: {{plugin: [{plugin}, "follower:{plugin}"]}}
"""))
    a, b = (race_options(exp, r, run_id="r") for r in plan(exp, "r")[:2])
    assert a.plugins == [str(plugin)] and b.plugins == [str(plugin), f"follower:{plugin}"]


def test_plugin_and_distribution_are_checked_at_load_like_bench_race(tmp_path):
    with pytest.raises(ConfigError) as e:
        load_experiment(_write(tmp_path, "name: x\nrace: {track: nginx, plugin: /no/such.zip}\nvariants: {a: {}}\n"))
    assert "variants.a: --plugin /no/such.zip" in str(e.value) and "\n" not in str(e.value)


def test_topology_paths_resolve_from_the_checkout_as_well_as_from_here(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # not the checkout: topologies/ is next to experiments/
    exp = load_experiment(ROOT / "experiments" / "ccr-overhead.yml")
    ccr = next(r for r in plan(exp, "r") if r.variant == "ccr")
    assert race_options(exp, ccr, run_id="r").topology == ROOT / "topologies" / "ccr-local.yml"


def test_bundled_examples_are_found_by_name_from_any_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no experiments/ or topologies/ here: the package's own copies are used
    for name in ("ccr-overhead", "ccr-overhead.yml", "experiments/ccr-overhead.yml"):
        exp = load_experiment(name)
        assert exp.name == "ccr-overhead" and exp.folder == bundled_dir("experiments")
    ccr = next(r for r in plan(exp, "r") if r.variant == "ccr")
    topology = race_options(exp, ccr, run_id="r").topology
    assert topology == bundled_dir("topologies") / "ccr-local.yml"
    for name in (topology, "ccr-local", "topologies/ccr-local.yml"):
        assert load_topology(name).name == "ccr-local"
    with pytest.raises(ConfigError) as e:
        load_topology("ccr-lokal")
    assert str(e.value).startswith("topology file ccr-lokal does not exist;") and "ccr-local, " in str(e.value)
    with pytest.raises(ConfigError, match="experiment file other/ccr-overhead.yml does not exist"):
        load_experiment("other/ccr-overhead.yml")  # a path with another folder is never an example's name
    # A file of that name here wins over the example.
    (tmp_path / "ccr-local").write_text("name: mine\nprovider: local\nclusters: [{name: a}]\n")
    assert load_topology("ccr-local").name == "mine"


def test_command_line_overrides_and_repetitions(tmp_path):
    exp = load_experiment(_write(tmp_path, BASIC), {"test-mode": False}, repetitions=1)
    assert exp.repetitions == 1 and len(plan(exp, "r")) == 3
    assert not race_options(exp, plan(exp, "r")[0], run_id="r").test_mode
    with pytest.raises(ConfigError, match="--repetitions 0"):
        load_experiment(_write(tmp_path, BASIC), repetitions=0)


STUDY = """
name: study
baseline: sd-off
repetitions: 3
race: {{track: http_logs, distribution: "{dist}"}}
variants:
  sd-off: {{challenge: baseline, car: [defaults, soft-deletes-off]}}
  sd-on: {{challenge: baseline}}
  ccr: {{challenge: ccr}}
study:
  soft-deletes-off: sd-off
  baseline-if-refused: sd-on
  indexing-task: {{sd-off: index-append, sd-on: index-append, ccr: index-append-leader}}
"""


@pytest.mark.parametrize("dist, baseline, variants", [
    ("elasticsearch:7.17.0", "sd-off", ["sd-off", "sd-on", "ccr"]),
    ("opensearch:1.3.0", "sd-off", ["sd-off", "sd-on", "ccr"]),
    ("elasticsearch:8.19.21", "sd-on", ["sd-on", "ccr"]),
    ("opensearch:2.19.1", "sd-on", ["sd-on", "ccr"]),
])
def test_the_study_baseline_follows_what_the_engine_allows(tmp_path, dist, baseline, variants):
    exp = load_experiment(_write(tmp_path, STUDY.format(dist=dist)))
    assert exp.baseline == baseline and list(exp.variants) == variants
    assert exp.study.note.startswith(f"Baseline: {baseline}")
    assert ("dropped" in exp.study.note) == (baseline == "sd-on")
    assert [r.variant for r in plan(exp, "r")][:len(variants)] == variants


def test_a_study_naming_an_unknown_variant_or_lacking_a_fallback_is_one_line(tmp_path):
    bad = STUDY.format(dist="opensearch:2.19.1").replace("ccr: index-append-leader", "cr: index-append-leader")
    with pytest.raises(ConfigError, match="study.indexing-task: 'cr' is not one of the variants"):
        load_experiment(_write(tmp_path, bad))
    no_fallback = STUDY.format(dist="opensearch:2.19.1").replace("  baseline-if-refused: sd-on\n", "")
    with pytest.raises(ConfigError, match="set study.baseline-if-refused"):
        load_experiment(_write(tmp_path, no_fallback))


@pytest.mark.parametrize("name", ["ccr-overhead.yml", "ccr-overhead-opensearch.yml"])
def test_shipped_ccr_overhead_studies(name):
    exp = load_experiment(ROOT / "experiments" / name)
    assert exp.repetitions >= 3 and exp.order == "interleaved" and exp.study is not None
    # both shipped engines (Elasticsearch 8, OpenSearch 2) refuse soft deletes off: soft-deletes-on is the baseline
    assert exp.baseline == "soft-deletes-on"
    assert list(exp.variants) == ["soft-deletes-on", "ccr", "ccr-tcp-compression"]
    topologies = {v: race_options(exp, r, run_id="r").topology for v, r in
                  ((r.variant, r) for r in plan(exp, "r")[:3])}
    assert topologies["soft-deletes-on"] is None
    for v in ("ccr", "ccr-tcp-compression"):
        topo = load_topology(topologies[v])
        assert {c.name for c in topo.clusters} == {"leader", "follower"}
        assert all(("tcp-compression" in c.car) == (v == "ccr-tcp-compression") for c in topo.clusters)
