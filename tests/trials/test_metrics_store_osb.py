"""The metrics store in OpenSearch Benchmark's layout, live: a race against the session's Elasticsearch writes
OSB's indices and fields into an OpenSearch 2.19.1 store, and another machine reads the trial back exactly."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from bench.cli import main
from bench.provision.model import ClusterInfo
from bench.trials.metrics_store import config as store_config
from bench.trials.metrics_store.http import StoreHttp
from bench.trials.sqlite import TrialStore

# OSB's names, copied from opensearch-project/opensearch-benchmark (osbenchmark/resources/*-template.json and the
# writers in osbenchmark/metrics.py: TestRun.as_dict, to_result_dicts, OsMetricsStore._put); the mirror is not in CI.
OSB_TEST_RUN_FIELDS = {"test-run-id", "test-run-timestamp", "environment", "pipeline", "user-tags", "workload",
                       "test_procedure", "cluster-config-instance", "cluster", "workload-params"}
OSB_METRIC_FIELDS = {"@timestamp", "relative-time-ms", "test-run-id", "test-run-timestamp", "environment", "workload",
                     "test_procedure", "cluster-config-instance", "name", "value", "unit", "sample-type", "meta",
                     "task", "operation", "operation-type", "workload-params"}
OSB_RESULT_FIELDS = {"test-run-id", "test-run-timestamp", "environment", "workload", "test_procedure",
                     "cluster-config-instance", "user-tags", "distribution-version", "distribution-flavor", "active",
                     "workload-params", "task", "operation", "name", "value"}
RALLY_ONLY = {"race-id", "race-timestamp", "track", "challenge", "car", "track-params", "relative-time"}


@pytest.fixture(autouse=True)
def _no_store_left_configured() -> Iterator[None]:
    store_config.reset()
    yield
    store_config.reset()


def _docs(http: StoreHttp, index: str, query: dict[str, Any]) -> list[dict[str, Any]]:
    http.request("POST", f"/{index}/_refresh")
    _, res = http.request("POST", f"/{index}/_search", {"query": query, "size": 10_000})
    return [h["_source"] for h in res["hits"]["hits"]]


def test_a_race_in_osbs_layout_is_read_back_as_the_local_trial(
        es_target: str, os_cluster: ClusterInfo, capsys: pytest.CaptureFixture[str], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    url = os_cluster.hosts[0]
    flags = [f"--metrics-store={url}", "--metrics-store-options=layout:osb,environment:nightly"]
    assert main(["race", "--track=nginx", "--test-mode", "--quiet", f"--target-hosts={es_target}",
                 "--challenge=index-only", "--track-params=bulk_size:50", "--user-tag=variant:osb", *flags]) == 0
    out = capsys.readouterr().out
    trial_id = re.search(r"Trial ([0-9a-f]{32}) stored", out).group(1)  # type: ignore[union-attr]
    with TrialStore() as local:
        trial, samples, summary = local.get_trial(trial_id), local.samples(trial_id), local.summary(trial_id)
    assert summary is not None and len(samples) > 0
    month = f"{trial.start_time:%Y-%m}"

    http = StoreHttp(store_config.from_url(url))
    _, indices = http.request("GET", "/_cat/indices/benchmark-*?format=json")
    assert {i["index"] for i in indices} >= {f"benchmark-test-runs-{month}", f"benchmark-metrics-{month}",
                                             f"benchmark-results-{month}"}
    _, rally_indices = http.request("GET", "/_cat/indices/rally-*?format=json")
    assert rally_indices == []

    runs = _docs(http, "benchmark-test-runs-*", {"term": {"test-run-id": trial_id}})
    assert len(runs) == 1 and OSB_TEST_RUN_FIELDS <= set(runs[0]) and not RALLY_ONLY & set(runs[0])
    run = runs[0]
    assert (run["workload"], run["test_procedure"], run["environment"], run["cluster-config-instance"]) == \
        ("nginx", "index-only", "nightly", ["external"])
    assert run["workload-params"] == {"bulk_size": "50"} and re.fullmatch(r"\d{8}T\d{6}Z", run["test-run-timestamp"])

    metrics = _docs(http, "benchmark-metrics-*", {"bool": {"filter": [{"term": {"test-run-id": trial_id}},
                                                                       {"term": {"name": "latency"}}]}})
    assert len(metrics) == len(samples)
    assert all(OSB_METRIC_FIELDS <= set(d) and not RALLY_ONLY & set(d) for d in metrics)
    assert sorted(d["relative-time-ms"] for d in metrics) == pytest.approx(sorted(samples["relative_time"] * 1000.0))
    assert sorted(d["value"] for d in metrics) == pytest.approx(sorted(samples["latency"] * 1000.0))

    results = _docs(http, "benchmark-results-*", {"term": {"test-run-id": trial_id}})
    assert results and all(OSB_RESULT_FIELDS <= set(d) and not RALLY_ONLY & set(d) for d in results if d.get("task"))
    tp = next(d for d in results if d["name"] == "throughput" and d["task"] == "index-append")
    assert tp["value"]["median"] == pytest.approx(summary.task("index-append").throughput.median)  # type: ignore[union-attr]

    # The store's mappings are OSB's types for OSB's fields (what OSB's dashboards aggregate and sort on).
    _, mapping = http.request("GET", f"/benchmark-metrics-{month}/_mapping")
    props = mapping[f"benchmark-metrics-{month}"]["mappings"]["properties"]
    assert props["relative-time-ms"]["type"] == "float" and props["test-run-id"]["type"] == "keyword"
    assert props["test-run-timestamp"]["type"] == "date" and props["workload"]["type"] == "keyword"

    # Another machine reads the trial back from the OSB-layout store alone, equal to the local one.
    monkeypatch.setenv("BENCH_HOME", str(tmp_path / "other-machine"))
    assert main(["list", "trials", *flags]) == 0
    assert "[store]" in next(line for line in capsys.readouterr().out.splitlines() if line.startswith(trial_id[:12]))
    assert main(["show", trial_id[:10], "--report-format=json", *flags]) == 0
    assert "index-append" in capsys.readouterr().out
    assert main(["compare", trial_id, trial_id, "--format", "json", *flags]) == 0
    assert "index-append" in json.dumps(json.loads(capsys.readouterr().out))
    store_config.configure(store_config.from_cli(url, "layout:osb"))
    from bench.trials.open import open_store

    with open_store() as remote:
        assert remote.get_trial(trial_id[:12]) == trial
        pd.testing.assert_frame_equal(remote.samples(trial_id), samples)
        assert remote.summary(trial_id) == summary
