"""Rally's feature stats devices (and OSB's segment-replication-stats) against real engines: each produces its data
where the engine serves its API, and is refused in one line naming the device and the request where it does not."""

from __future__ import annotations

import asyncio
import contextlib
import json
import urllib.request
from typing import Any

import pytest

from bench.cli import main
from bench.driver.samples import TelemetryRow
from bench.http.client import ClusterTarget
from bench.telemetry import TelemetryContext, TelemetryRunner, create_devices, resolve_telemetry
from bench.telemetry.feature_stats import Unserved
from bench.trials.sqlite import TrialStore


def render_rows(summary: Any) -> list[Any]:
    from bench.telemetry.section import SECTION, telemetry_rows
    return telemetry_rows(summary.sections[SECTION])


def _run(devices: str, target: ClusterTarget, facts: dict[str, Any], params: dict[str, Any] | None = None,
         work: Any = None) -> list[TelemetryRow]:
    """The devices started, ``work`` done, the devices stopped: the rows they wrote."""
    rows: list[TelemetryRow] = []
    config = resolve_telemetry(devices, params, None)
    ctx = TelemetryContext(targets={target.name: target}, clusters={target.name: facts})

    async def go() -> None:
        runner = TelemetryRunner(create_devices(config, ctx), rows.extend)
        await runner.start()
        if work is not None:
            await asyncio.to_thread(work)
        await asyncio.sleep(0.3)
        await runner.stop()

    asyncio.run(go())
    return rows


def _req(url: str, method: str = "GET", body: Any = None, ndjson: str | None = None) -> Any:
    data = ndjson.encode() if ndjson is not None else (json.dumps(body).encode() if body is not None else None)
    ctype = "application/x-ndjson" if ndjson is not None else "application/json"
    req = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": ctype})
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.loads(r.read() or b"null")


def _es(es_target: str) -> tuple[ClusterTarget, dict[str, Any]]:
    return (ClusterTarget(name="default", hosts=[es_target]),
            {"engine": "elasticsearch", "version": "8.19.21"})


@pytest.mark.timeout(300)
def test_race_samples_master_ingest_and_disk_usage_on_elasticsearch(es_target: str) -> None:
    rc = main(["--quiet", "race", "--track=nginx", "--test-mode", "--challenge=index-only",
               f"--target-hosts={es_target}", "--telemetry=master-node-stats,ingest-pipeline-stats,disk-usage-stats",
               "--telemetry-params=master-node-stats-sample-interval:0.5,disk-usage-stats-indices:nginx*"])
    assert rc == 0
    with TrialStore() as store:
        [trial] = store.list_trials()
        tel = store.telemetry(trial.id)
    master = tel[(tel["device"] == "master-node-stats") & (tel["metric"] == "master")]
    assert len(master) >= 2 and set(master["node"]) == {master["node"].iloc[0]} and master["node"].iloc[0]
    ingest = tel[tel["device"] == "ingest-pipeline-stats"]
    starts = ingest[ingest["metric"] == "_sample"]
    assert len(starts) == 2  # once at the start, once at the end: the summary reports the change
    assert {"node.count", "node.time_in_millis", "node.failed"} <= set(ingest["metric"])
    disk = tel[(tel["device"] == "disk-usage-stats") & (tel["metric"] == "total")]
    fields = {n.split("/", 1)[1] for n in disk["node"]}
    assert {"message", "batch_number", "routing_no"} <= fields, fields  # nginx's fields, each with its bytes
    assert (disk[disk["node"].str.endswith("/message")]["value"] > 1000).all()  # 1,000 log lines take bytes
    with TrialStore() as store:
        rows = {r.metric for r in render_rows(store.summary(trial.id))}
    assert {"Ingest pipeline cluster count", "Master node changes", "Disk usage of field"} <= rows


@pytest.mark.parametrize("device, request_line", [
    ("transform-stats", "GET /_transform/_stats"),
    ("searchable-snapshots-stats", "GET /_searchable_snapshots/stats"),
    ("geoip-stats", "GET /_ingest/geoip/stats"),
    ("data-stream-stats", "GET /_data_stream/_stats"),
])
def test_a_device_the_distribution_cannot_serve_is_refused_in_one_line(es_target: str, device: str,
                                                                       request_line: str) -> None:
    # Maven's integ-test build of 8.19.21 has none of these modules: the refusal names device, cluster and request.
    target, facts = _es(es_target)
    with pytest.raises(Unserved) as e:
        _run(device, target, facts)
    line = str(e.value)
    assert "\n" not in line and f"telemetry device {device}: cluster default" in line and request_line in line
    assert "leave the device out" in line


def test_segment_replication_stats_are_refused_on_elasticsearch(es_target: str) -> None:
    target, facts = _es(es_target)
    with pytest.raises(Unserved, match="segment-replication-stats: cluster default runs elasticsearch"):
        _run("segment-replication-stats", target, facts)


@pytest.mark.timeout(400)
def test_data_streams_and_segment_replication_on_opensearch(os_cluster: Any) -> None:
    info = os_cluster  # the session's OpenSearch (tests/conftest.py): what this test makes is deleted after it
    try:
        startup = info.facts()["node_startup_time_s"]  # Rally's node_startup_time, kept with every started cluster
        assert set(startup) == {"default-0"} and 1 < startup["default-0"] < 400
        url = info.hosts[0]
        target = ClusterTarget(name="default", hosts=[url.removeprefix("http://")])
        facts = {"engine": "opensearch", "version": info.version}
        _req(f"{url}/_index_template/logs-tpl", "PUT",
             {"index_patterns": ["logs-bench*"], "data_stream": {}, "priority": 200})
        _req(f"{url}/segrep", "PUT", {"settings": {"index.replication.type": "SEGMENT", "number_of_replicas": 0}})

        def work() -> None:
            docs = "".join(json.dumps({"create": {}}) + "\n" + json.dumps({"@timestamp": 1700000000000 + i}) + "\n"
                           for i in range(50))
            _req(f"{url}/logs-bench-a/_bulk?refresh=true", "POST", ndjson=docs)

        rows = _run("data-stream-stats,segment-replication-stats", target, facts,
                    {"data-stream-stats-sample-interval": 0.2, "segment-replication-stats-sample-interval": 0.2},
                    work=work)
    finally:
        for made in ("_data_stream/logs-bench-a", "_index_template/logs-tpl", "segrep"):
            with contextlib.suppress(OSError):  # not made: the test failed before, and says why
                _req(f"{info.hosts[0]}/{made}", "DELETE")
    ds = [r for r in rows if r.device == "data-stream-stats"]
    last = max(r.timestamp for r in ds)
    final = {(r.node, r.metric): r.value for r in ds if r.timestamp == last}
    assert final[("", "data_stream_count")] == 1 and final[("logs-bench-a", "backing_indices")] == 1
    assert final[("logs-bench-a", "maximum_timestamp")] == 1700000000049
    seg = [r for r in rows if r.device == "segment-replication-stats"]
    assert [r for r in seg if r.metric == "_sample" and r.value == 1.0]  # answered every time (no replica: no shard)
    assert not [r for r in seg if r.metric == "_sample" and r.value == 0.0]


def _df(rows: list[tuple[float, str, str, str, str, float]]) -> Any:
    import pandas as pd
    return pd.DataFrame(rows, columns=["timestamp", "cluster", "node", "device", "metric", "value"])


def test_the_summary_reports_ingest_changes_master_changes_disk_usage_and_startup_time() -> None:
    from bench.telemetry.feature_summary import feature_figures
    df = _df([
        (1, "c", "n1", "ingest-pipeline-stats", "node.count", 10), (9, "c", "n1", "ingest-pipeline-stats",
                                                                     "node.count", 110),
        (1, "c", "n2", "ingest-pipeline-stats", "node.count", 0), (9, "c", "n2", "ingest-pipeline-stats",
                                                                    "node.count", 50),
        (1, "c", "n1", "ingest-pipeline-stats", "pipeline.p.time_in_millis", 5),
        (9, "c", "n1", "ingest-pipeline-stats", "pipeline.p.time_in_millis", 25),
        (1, "c", "a", "master-node-stats", "master", 1), (2, "c", "b", "master-node-stats", "master", 1),
        (3, "c", "b", "master-node-stats", "master", 1), (4, "c", "a", "master-node-stats", "master", 1),
        (9, "c", "idx/message", "disk-usage-stats", "total", 4096), (9, "c", "idx/message", "disk-usage-stats",
                                                                      "doc_values", 0),
        (0, "c", "n1", "startup", "node_startup_time", 21.5), (1, "c", "", "master-node-stats", "_sample", 1),
    ])
    figs = {(f.metric, f.scope): (f.value, f.unit) for f in feature_figures(df)}
    assert figs[("Ingest pipeline cluster count", "c")] == (150, "")  # (110 - 10) + (50 - 0)
    assert figs[("Ingest pipeline time", "c/p")] == (20, "ms")
    assert figs[("Master node changes", "c")] == (2, "")  # a -> b -> b -> a
    assert figs[("Disk usage of field", "c/idx/message")] == (4096, "bytes")
    assert figs[("Node startup time", "c/n1")] == (21.5, "s")
    assert not any(m.startswith("_") for m, _ in figs)
