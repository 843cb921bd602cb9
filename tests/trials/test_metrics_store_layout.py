"""The metrics store's OSB layout as pure renaming: documents and templates in OSB's names, and back."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.trials.metrics_store import config as store_config
from bench.trials.metrics_store import layout
from bench.trials.metrics_store.templates import index_templates
from bench.util.errors import ConfigError

# OSB's field names, as osbenchmark/metrics.py writes them (OsMetricsStore._put / TestRun.as_dict /
# to_result_dicts) and osbenchmark/resources/{metrics,test-runs,results}-template.json map them.
OSB_RENAMED = {"test-run-id", "test-run-timestamp", "workload", "test_procedure", "cluster-config-instance",
               "workload-params", "relative-time-ms"}
RALLY_RENAMED = {"race-id", "race-timestamp", "track", "challenge", "car", "track-params", "relative-time"}


def _doc() -> dict[str, object]:
    return {"race-id": "ab12", "race-timestamp": "20261126T200000Z", "environment": "ci", "track": "nyc_taxis",
            "challenge": "append", "car": "external", "track-params": {"bulk_size": "50"}, "relative-time": 1.5,
            "name": "latency", "value": 3.0, "unit": "ms", "meta": {"success": True, "tag_x": "y"},
            "bench": {"latency": 0.003}, "bench-version": "0.1", "bench-seq": 7}


def test_osb_renames_every_differing_field_and_back_exactly() -> None:
    doc = _doc()
    osb = layout.to_layout(doc, "osb")
    assert OSB_RENAMED <= set(osb) and not RALLY_RENAMED & set(osb)
    assert (osb["test-run-id"], osb["workload"], osb["test_procedure"], osb["cluster-config-instance"],
            osb["relative-time-ms"]) == ("ab12", "nyc_taxis", "append", "external", 1.5)
    # What both tools name alike, and bench's own fields, stay as they are.
    for same in ("environment", "name", "value", "unit", "meta", "bench", "bench-version", "bench-seq"):
        assert osb[same] == doc[same]
    assert layout.from_layout(osb, "osb") == doc
    assert layout.to_layout(doc, "rally") is doc and layout.from_layout(doc, "rally") is doc


def test_index_names_and_query_fields_per_layout() -> None:
    assert [layout.kind(k, "osb") for k in (layout.RACES, layout.METRICS, layout.RESULTS)] == \
        ["test-runs", "metrics", "results"]
    assert [layout.kind(k, "rally") for k in (layout.RACES, layout.METRICS, layout.RESULTS)] == \
        ["races", "metrics", "results"]
    assert layout.field("race-id", "osb") == "test-run-id" and layout.field("race-id", "rally") == "race-id"
    assert layout.field("bench-record", "osb") == "bench-record"


def test_osb_templates_map_osbs_fields_under_osbs_index_patterns() -> None:
    templates = index_templates("benchmark", "osb")
    assert sorted(t["index_patterns"][0] for t in templates.values()) == \
        ["benchmark-metrics-*", "benchmark-results-*", "benchmark-test-runs-*"]
    metrics = templates["benchmark-metrics-bench"]["template"]["mappings"]["properties"]
    # The types OSB's metrics-template.json gives these fields.
    assert metrics["relative-time-ms"] == {"type": "float"} and metrics["test-run-id"] == {"type": "keyword"}
    assert metrics["test-run-timestamp"]["format"] == "basic_date_time_no_millis"
    for props in (t["template"]["mappings"]["properties"] for t in templates.values()):
        assert {"test-run-id", "workload", "test_procedure", "cluster-config-instance"} <= set(props)
        assert not RALLY_RENAMED & set(props)


def test_layout_is_chosen_in_the_store_config(tmp_path: Path) -> None:
    cfg = store_config.from_cli("http://127.0.0.1:9200", "layout:osb")
    assert (cfg.layout, cfg.prefix) == ("osb", "benchmark")  # OSB's default prefix
    assert store_config.from_cli("http://127.0.0.1:9200", "layout:osb,index_prefix:nightly").prefix == "nightly"
    rally = store_config.from_cli("http://127.0.0.1:9200", None)
    assert (rally.layout, rally.prefix) == ("rally", "rally") and rally.key != cfg.key
    assert "osb layout" in store_config.describe(cfg)
    ini = tmp_path / "bench.ini"
    ini.write_text("[reporting]\ndatastore.type = opensearch\ndatastore.host = 127.0.0.1\ndatastore.layout = osb\n")
    from_ini = store_config.from_ini(ini)
    assert from_ini is not None and (from_ini.layout, from_ini.prefix) == ("osb", "benchmark")
    with pytest.raises(ConfigError, match=r"--metrics-store-options: layout 'osbx' is not one of rally, osb"):
        store_config.from_cli("http://127.0.0.1:9200", "layout:osbx")
    ini.write_text("[reporting]\ndatastore.type = opensearch\ndatastore.host = h\ndatastore.layout = es\n")
    with pytest.raises(ConfigError, match=r"bench.ini: \[reporting\] datastore.layout: layout 'es'"):
        store_config.from_ini(ini)


def test_layout_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(store_config.ENV_URL, "http://127.0.0.1:9200")
    monkeypatch.setenv(store_config.ENV_OPTIONS, "layout:osb")
    store_config.reset()
    cfg = store_config.configured_store()
    assert cfg is not None and (cfg.layout, cfg.prefix) == ("osb", "benchmark")
