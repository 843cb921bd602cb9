"""Races against real Elasticsearch: what the driver measures and how a challenge's schedule runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import psutil

from bench.cli import main
from bench.store import TrialStore


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
