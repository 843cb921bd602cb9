"""Races against real Elasticsearch: what the driver measures and how a challenge's schedule runs."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from bench.cli import main
from bench.results.exit_status import EXIT_UNMEASURED
from bench.trials.sqlite import TrialStore


def write_track(root: Path, schedule: list[dict], *, indices: list[dict] | None = None,
                corpora: list[dict] | None = None) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    track = {"version": 2, "description": "test track", "indices": indices or [], "corpora": corpora or [],
             "schedule": schedule}
    (root / "track.json").write_text(json.dumps(track))
    return root


def only_trial(store: TrialStore):
    trials = store.list_trials()
    assert len(trials) == 1
    return trials[0]


def race(*args: str) -> int:
    return main(["--quiet", "race", *args])


def test_throttled_requests_show_coordinated_omission(tmp_path, es_target):
    # 1 client, target 20 ops/s, but each request takes 0.2 s: the schedule falls behind and latency
    # (from the scheduled start) keeps growing while service time stays at ~0.2 s.
    track = write_track(tmp_path / "t", [{"operation": {"name": "slow", "operation-type": "sleep", "duration": 0.2},
                                          "clients": 1, "iterations": 10, "target-throughput": 20}])
    assert race(f"--track-path={track}", f"--target-hosts={es_target}") == 0
    with TrialStore() as store:
        trial = only_trial(store)
        df = store.samples(trial.id).sort_values("absolute_time")
    assert len(df) == 10
    assert df["service_time"].between(0.19, 0.5).all()
    # The n-th request was due at n*0.05 s but could only start at n*0.2 s.
    assert df["latency"].iloc[-1] > df["service_time"].iloc[-1] + 0.3
    assert (df["latency"].diff().dropna() > 0.1).all()


def test_ramp_up_starts_clients_one_after_another_within_warmup(tmp_path, es_target):
    # Rally's ramp-up-time-period: 4 clients over 2 s start at 0, 0.5, 1.0 and 1.5 s; each then follows
    # its own throttled schedule (2 ops/s), so its first request is due exactly at its start.
    track = write_track(tmp_path / "t", [{"operation": {"name": "nap", "operation-type": "sleep", "duration": 0.01},
                                          "clients": 4, "target-throughput": 8, "warmup-time-period": 2,
                                          "ramp-up-time-period": 2, "time-period": 1}])
    assert race(f"--track-path={track}", f"--target-hosts={es_target}") == 0
    with TrialStore() as store:
        df = store.samples(only_trial(store).id)
    first = df.groupby("client_id")["absolute_time"].min().sort_index()
    offsets = (first - first.iloc[0]).to_numpy()
    assert abs(offsets - [0.0, 0.5, 1.0, 1.5]).max() < 0.05, offsets
    # Every client was started before measuring began, so each has measured samples.
    assert set(df.loc[~df["warmup"], "client_id"]) == {0, 1, 2, 3}


def test_unthrottled_latency_equals_service_time_and_warmup_is_flagged(tmp_path, es_target):
    track = write_track(tmp_path / "t", [
        {"operation": {"name": "health", "operation-type": "cluster-health",
                       "request-params": {"wait_for_status": "yellow"}},
         "clients": 2, "warmup-iterations": 3, "iterations": 5}])
    assert race(f"--track-path={track}", f"--target-hosts={es_target}") == 0
    with TrialStore() as store:
        trial = only_trial(store)
        df = store.samples(trial.id)
        summary = store.summary(trial.id)
    assert len(df) == 16  # 2 clients x (3 warmup + 5 measured)
    assert df["warmup"].sum() == 6
    assert (abs(df["latency"] - df["service_time"]) < 0.005).all()
    task = summary.task("health")
    assert task.requests == 10 and task.warmup_requests == 6 and task.error_rate == 0


def test_parallel_block_ends_when_completed_by_task_is_done(tmp_path, es_target):
    track = write_track(tmp_path / "t", [{"parallel": {"completed-by": "short", "tasks": [
        {"name": "long", "operation": {"name": "nap", "operation-type": "sleep", "duration": 0.1},
         "clients": 2, "time-period": 120},
        {"name": "short", "operation": {"name": "nap2", "operation-type": "sleep", "duration": 0.1},
         "clients": 1, "iterations": 10},
    ]}}])
    assert race(f"--track-path={track}", f"--target-hosts={es_target}") == 0
    with TrialStore() as store:
        df = store.samples(only_trial(store).id)
    assert (df["task"] == "short").sum() == 10
    long_df = df[df["task"] == "long"]
    assert 5 <= len(long_df) and long_df["relative_time"].max() < 10  # stopped with "short", not after 120 s


def test_bulk_indexes_every_document_once_across_workers(tmp_path, es_target, es_cluster):
    # The nginx corpus, split across 4 clients dealt out to 2 worker processes: every document lands once.
    assert race("--track=nginx", "--challenge=index-only", "--test-mode", f"--target-hosts={es_target}",
                "--worker-processes=2", "--track-params=bulk_size:100,bulk_indexing_clients:4",
                "--user-tag=purpose:test") == 0
    import urllib.request

    with urllib.request.urlopen(f"{es_cluster.hosts[0]}/nginx/_count") as r:
        assert json.load(r)["count"] == 1000
    with TrialStore() as store:
        trial = only_trial(store)
        df = store.samples(trial.id)
        summary = store.summary(trial.id)
    assert trial.status == "complete" and trial.user_tags == {"purpose": "test"}
    assert trial.pipeline == "benchmark-only"
    bulk = df[df["operation_type"] == "bulk"]
    assert bulk["units"].sum() == 1000 and sorted(bulk["client_id"].unique()) == [0, 1, 2, 3]
    assert bulk["success"].all()
    assert summary.cluster is not None and summary.cluster.total.docs_count >= 1000


def test_report_formats_and_show(tmp_path, es_target, capsys):
    track = write_track(tmp_path / "t", [{"operation": {"name": "health", "operation-type": "cluster-health",
                                                        "request-params": {"wait_for_status": "yellow"}},
                                          "iterations": 3}])
    out = tmp_path / "report.csv"
    assert race(f"--track-path={track}", f"--target-hosts={es_target}", "--report-format=csv",
                f"--report-file={out}") == 0
    text = out.read_text()
    assert text.splitlines()[0].lower().startswith("metric,task,value,unit")
    assert "health" in text
    with TrialStore() as store:
        trial_id = only_trial(store).id
    capsys.readouterr()
    assert main(["show", trial_id[:8], "--report-format=markdown"]) == 0
    shown = capsys.readouterr().out
    assert "| Metric" in shown and "health" in shown


def java_processes_under(path: Path) -> list[psutil.Process]:
    found = []
    for p in psutil.process_iter(["cmdline"]):
        try:
            if any(str(path) in part for part in (p.info["cmdline"] or [])):
                found.append(p)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            pass
    return found


@pytest.mark.usefixtures("local_engines")  # bench race starts its own node
def test_readme_race_from_distribution(tmp_path):
    """The README's first command, as a user runs it: bench provisions, races, reports, stops the node."""
    env = {**os.environ, "BENCH_HOME": os.environ["BENCH_HOME"], "BENCH_CACHE": os.environ["BENCH_CACHE"]}
    proc = subprocess.run([sys.executable, "-m", "bench", "race", "--track=nginx", "--test-mode",
                           "--report-format=markdown"], env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "| Mean Throughput" in proc.stdout and "index-append" in proc.stdout
    # Rally's cluster rows read from the real node: the spread across primary shards, GC during the schedule.
    for row in ("| Median cumulative indexing time across primary shards", "| Total Young Gen GC count",
                "| Translog size"):
        assert row in proc.stdout, row
    with TrialStore() as store:
        trial = only_trial(store)
    assert trial.status == "complete" and trial.pipeline == "from-distribution"
    assert trial.clusters and trial.clusters[0]["version"] == "8.19.21"
    logs = list((Path(os.environ["BENCH_HOME"]) / "trials" / trial.id).rglob("*.log"))
    assert logs, "node logs are kept with the trial"
    assert not java_processes_under(Path("/var/tmp/bench-nodes") / trial.id)


def test_gzipped_bulk_bodies_are_indexed(tmp_path, es_target, es_cluster):
    # http_compress: bodies are gzipped before the clock starts and sent with Content-Encoding: gzip.
    assert race("--track=nginx", "--challenge=index-only", "--test-mode", f"--target-hosts={es_target}",
                "--client-options=http_compress:true", "--track-params=bulk_size:250") == 0
    import urllib.request

    with urllib.request.urlopen(f"{es_cluster.hosts[0]}/nginx/_count") as r:
        assert json.load(r)["count"] == 1000
    with TrialStore() as store:
        df = store.samples(only_trial(store).id)
    bulk = df[df["operation_type"] == "bulk"]
    assert bulk["success"].all() and bulk["units"].sum() == 1000
    # bytes_sent counts the uncompressed body, as Rally does, so MB/s compare across compression settings.
    assert bulk["bytes_sent"].sum() > 300_000


def test_bulk_item_failures_are_counted_per_document(tmp_path, es_target):
    # Documents that do not fit the mapping fail item by item; the bulk succeeds at HTTP level.
    data = tmp_path / "docs.json"
    data.write_text("".join(json.dumps({"n": "not-a-number" if i % 4 == 0 else i}) + "\n" for i in range(100)))
    track = write_track(
        tmp_path / "t",
        [{"operation": {"name": "del", "operation-type": "delete-index"}},
         {"operation": {"name": "create", "operation-type": "create-index"}},
         {"operation": {"name": "load", "operation-type": "bulk", "bulk-size": 50}, "clients": 1}],
        indices=[{"name": "typed", "body": "index.json"}],
        corpora=[{"name": "c", "documents": [{"source-file": str(data), "document-count": 100,
                                              "target-index": "typed"}]}])
    (track / "index.json").write_text(json.dumps({"settings": {"number_of_shards": 1, "number_of_replicas": 0},
                                                  "mappings": {"properties": {"n": {"type": "long"}}}}))
    assert race(f"--track-path={track}", f"--target-hosts={es_target}") == 0
    with TrialStore() as store:
        trial = only_trial(store)
        df = store.samples(trial.id)
        summary = store.summary(trial.id)
    bulk = df[df["task"] == "load"]
    assert len(bulk) == 2 and bulk["failed_units"].sum() == 25
    assert set(bulk["error_type"]) == {"bulk-item-failures"}
    assert summary.task("load").error_rate == 1.0 and summary.task("load").failed_units == 25


def test_task_whose_requests_all_fail_is_complete_with_errors_and_flagged_in_compare(tmp_path, es_target, capsys):
    def probe_track(name: str, path: str) -> Path:
        return write_track(tmp_path / name, [
            {"operation": {"name": "health", "operation-type": "cluster-health",
                           "request-params": {"wait_for_status": "yellow"}}, "iterations": 5},
            {"operation": {"name": "probe", "operation-type": "raw-request", "path": path}, "iterations": 12}])

    # The broken race first: bench.cli adds a log handler per main() call, and this file must get one here.
    # Stored complete, but a task none of whose requests succeeded is no measurement: exit 4, one line.
    assert race(f"--track-path={probe_track('broken', '/_no_such_endpoint')}",
                f"--target-hosts={es_target}") == EXIT_UNMEASURED
    err = capsys.readouterr().err
    assert "not measured: every request of task 'probe' failed (12 of 12)" in err and "exit 4" in err
    log_text = (Path(os.environ["BENCH_HOME"]) / "logs" / "bench.log").read_text()
    warned = [line for line in log_text.splitlines() if "a request failed" in line]
    assert len(warned) == 1 and "_no_such_endpoint" in warned[0]  # one warning per distinct message
    assert race(f"--track-path={probe_track('clean', '/_cluster/health')}", f"--target-hosts={es_target}") == 0
    with TrialStore() as store:
        broken, clean = sorted(store.list_trials(), key=lambda t: t.start_time)
        summary = store.summary(broken.id)
        df = store.samples(broken.id)
    assert broken.status == "complete"  # the run ended normally; its errors are in the summary
    probe = summary.task("probe")
    assert probe.failed_requests == 12 and probe.throughput is None and not probe.latency
    [(message, count)] = [(e.message, e.count) for e in probe.error_messages]
    assert count == 12 and message.startswith("HTTP 4") and "_no_such_endpoint" in message
    assert set(df.loc[df["task"] == "probe", "error"]) == {message}  # each failed sample keeps its message
    assert {r.metric for r in summary.rows() if r.task == "probe"} == {"error rate", "failed requests"}
    assert summary.task("health").throughput is not None

    capsys.readouterr()
    assert main(["list", "trials"]) == 0
    listed = capsys.readouterr().out
    assert "complete, with errors (12 failed requests)" in listed and listed.count("complete, with errors") == 1
    for fmt in ("table", "markdown", "csv", "json"):
        assert main(["show", broken.id[:8], f"--report-format={fmt}", "--all"]) == 0
        shown = capsys.readouterr().out
        if fmt == "json":  # the document only (it parses), the trial's status among its facts
            body = json.loads(shown)
            assert body["trial"]["status"].startswith("complete, with errors")
            [error] = body["errors"]
            assert {k: error[k] for k in ("task", "message", "count", "documents")} == \
                {"task": "probe", "message": message, "count": 12, "documents": 0}
            assert 0 < error["first_s"] <= error["last_s"]  # when the kind came, seconds after its step started
            assert {r["metric"] for r in body["rows"] if r["task"] == "probe"} == {"error rate", "failed requests"}
            continue
        if fmt == "csv":  # the rows only, the errors among them
            rows = list(csv.reader(io.StringIO(shown)))
            assert rows[0] == ["Metric", "Task", "Value", "Unit", "Partial"]
            assert [f"error: {message}", "probe", "12", "requests", ""] in rows
            continue
        assert "complete, with errors" in shown.splitlines()[0], fmt
        timing = [x for x in shown.splitlines() if "probe" in x and ("Throughput" in x or "percentile" in x)]
        assert not timing, fmt
        assert any("health" in x and "Throughput" in x for x in shown.splitlines()), fmt  # the healthy task's stay
        if fmt == "csv":
            rows = list(csv.reader(io.StringIO(shown.split("\n", 1)[1])))
            assert [f"error: {message}", "probe", "12", "requests", ""] in rows
        else:
            assert f"12× {message}" in shown

    assert main(["compare", clean.id, broken.id, "--all"]) == 0
    compared = capsys.readouterr().out
    assert "complete, with errors" in compared and "task 'probe': 12 of 12 requests failed" in compared
    # the messages too, not only the count (wrapped to the terminal's width like every compare line)
    assert " ".join(f"12× {message}".split()) in " ".join(compared.split())
    error_row = next(line for line in compared.splitlines() if line.startswith("error rate") and "probe" in line)
    assert "worse, not judged (task had errors: 12 failed)" in error_row
    # The throughput the broken trial does not have is named as missing, with the reason.
    assert any(line.startswith("Only in") and "Mean Throughput (probe)" in line
               and "task had errors: 12 failed" in line for line in compared.splitlines())


def test_cluster_health_takes_rally_string_booleans(tmp_path, es_target, capsys):
    track = write_track(tmp_path / "t", [{"operation": {
        "name": "health", "operation-type": "cluster-health",
        "request-params": {"wait_for_status": "yellow", "wait_for_no_relocating_shards": "true"},
        "retry-until-success": "false"}, "iterations": 3}])
    assert race(f"--track-path={track}", f"--target-hosts={es_target}") == 0
    with TrialStore() as store:
        summary = store.summary(only_trial(store).id)
    assert summary.task("health").failed_requests == 0 and summary.task("health").throughput is not None

    garbage = write_track(tmp_path / "g", [{"operation": {
        "name": "health", "operation-type": "cluster-health",
        "request-params": {"wait_for_status": "yellow", "wait_for_no_relocating_shards": "maybe"}}, "iterations": 3}])
    capsys.readouterr()
    assert race(f"--track-path={garbage}", f"--target-hosts={es_target}") != 0
    err = capsys.readouterr().err
    assert "'wait_for_no_relocating_shards' is 'maybe'" in err and "Traceback" not in err
    with TrialStore() as store:
        assert store.list_trials()[0].status == "failed"
