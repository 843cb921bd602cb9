"""Rally's task properties and generic operation parameters, shown taking effect on a real Elasticsearch:
unit-aware pacing, include-in-reporting, meta, detailed-results, assertions, opaque-id, request-timeout,
ignore-response-error-level and cluster-health as rally-tracks write it."""

from __future__ import annotations

import json
from pathlib import Path

from bench.cli import main
from bench.trials.sqlite import TrialStore

LOOKALIKE = Path(__file__).parents[1] / "data" / "rally_lookalike"


def race(*args: str) -> int:
    return main(["--quiet", "race", *args])


def write_track(root: Path, schedule: list[dict], **extra: object) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "track.json").write_text(json.dumps({"version": 2, "schedule": schedule, **extra}))
    return root


def stored():
    with TrialStore() as store:
        trial = store.list_trials()[0]
        return trial, store.summary(trial.id), store.samples(trial.id)


def test_lookalike_default_challenge_runs_and_honours_what_it_says(es_target):
    assert race(f"--track-path={LOOKALIKE}", f"--target-hosts={es_target}") == 0
    trial, summary, df = stored()
    assert trial.status == "complete" and not df["success"].eq(False).any()
    # include-in-reporting false: ran and stored, not summarised (and said so)
    health = df[df["task"] == "check-cluster-health"]
    assert len(health) == 1 and health["success"].all()
    assert "check-cluster-health" not in [t.task for t in summary.tasks]
    assert any("Not reported (include-in-reporting: false): check-cluster-health" in n for n in summary.notes)
    # "50 docs/s" with bulks of int(10 / 2) = 5 documents: 10 requests/s, due 0.1 s apart after the first
    bulks = df[df["task"] == "index-append"].sort_values("absolute_time")
    assert len(bulks) == 8 and bulks["units"].eq(5).all()
    gaps = bulks["absolute_time"].diff().dropna().round(6)
    assert gaps.iloc[1:].eq(0.1).all() and 0 < gaps.iloc[0] <= 0.1 + 1e-6
    assert summary.task("index-append").units == 40
    assert all(json.loads(m) == {"phase": "ingest"} for m in bulks["meta"])
    # detailed-results: what the answer said, per sample; the assertions (hits > 0, not timed out) held
    search = df[df["task"] == "default"]
    assert len(search) == 7 and search["success"].all()
    assert all(json.loads(m)["hits"] == 40 and json.loads(m)["timed_out"] is False for m in search["meta"])
    assert df[df["task"] == "term"]["meta"].isna().all()


def test_failed_assertion_fails_the_request_with_rallys_message(tmp_path, es_target, capsys):
    track = write_track(tmp_path / "t", [{"operation": {
        "name": "count-nodes", "operation-type": "raw-request", "path": "/_cluster/health",
        "assertions": [{"property": "number_of_nodes", "condition": ">=", "value": 5}]}, "iterations": 2}])
    assert race(f"--track-path={track}", f"--target-hosts={es_target}") == 4  # its task fails every request on purpose: not measured (docs: exit codes)
    _, summary, df = stored()
    assert (~df["success"]).all() and df["error_type"].eq("assertion").all()
    assert df["error"].iloc[0] == "Expected [number_of_nodes] in [count-nodes] to be >= [5] but was [1]."
    assert summary.task("count-nodes").failed_requests == 2


def test_opaque_id_and_headers_reach_the_cluster(tmp_path, es_target):
    # The task list shows the X-Opaque-Id of the request that asks for it: asserted against the answer.
    track = write_track(tmp_path / "t", [{"operation": {
        "name": "tasks", "operation-type": "raw-request",
        "path": "/_tasks?actions=cluster:monitor/tasks/lists*&detailed=true&group_by=none",
        "opaque-id": "bench-opaque-42", "headers": {"X-Bench-Test": "yes"},
        "assertions": [{"property": "tasks.0.headers.X-Opaque-Id", "condition": "==", "value": "bench-opaque-42"}]},
        "iterations": 2}])
    assert race(f"--track-path={track}", f"--target-hosts={es_target}") == 0
    _, _, df = stored()
    assert len(df) == 2 and df["success"].all(), df["error"].tolist()


def test_request_timeout_times_out_a_slow_request(tmp_path, es_target):
    # The cluster holds this answer ~5 s (waiting for nodes it will never have); the client gives up at 0.5 s.
    track = write_track(tmp_path / "t", [{"operation": {
        "name": "slow", "operation-type": "raw-request", "path": "/_cluster/health?wait_for_nodes=9&timeout=5s",
        "request-timeout": 0.5}, "iterations": 1}])
    assert race(f"--track-path={track}", f"--target-hosts={es_target}") == 4  # its task fails every request on purpose: not measured (docs: exit codes)
    _, _, df = stored()
    assert df["error_type"].tolist() == ["timeout"] and df["service_time"].iloc[0] < 2.0


def test_non_fatal_errors_do_not_abort(tmp_path, es_target):
    missing = {"operation": {"name": "missing", "operation-type": "raw-request", "path": "/no-such-index-x/_search"},
               "iterations": 2}
    after = {"operation": {"name": "after", "operation-type": "sleep", "duration": 0.01}, "iterations": 1}
    fatal = write_track(tmp_path / "fatal", [missing, after])
    assert race(f"--track-path={fatal}", f"--target-hosts={es_target}", "--on-error=abort") != 0
    _, _, df = stored()
    assert "after" not in set(df["task"])
    ignored = write_track(tmp_path / "ignored", [{**missing, "ignore-response-error-level": "non-fatal"}, after])
    assert race(f"--track-path={ignored}", f"--target-hosts={es_target}", "--on-error=abort") == 4  # not aborted, yet 'missing' measured nothing
    with TrialStore() as store:
        newest = store.list_trials()[0]
        df = store.samples(newest.id)
    assert set(df["task"]) == {"missing", "after"} and (~df[df["task"] == "missing"]["success"]).all()


def test_cluster_health_judged_as_rally_does(tmp_path, es_target):
    # An index with a replica on one node: yellow. Without wait_for_status every status is fine (Rally);
    # waiting for green fails (1 s timeout, the cluster's 408 answer judged by its status).
    setup = [{"operation": {"operation-type": "delete-index"}},
             {"operation": {"operation-type": "create-index"}}]
    check = {"name": "health", "operation": {"operation-type": "cluster-health", "index": "yellow-*",
                                              "request-params": {"wait_for_no_relocating_shards": "true"}}}
    strict = {"name": "green", "operation": {"operation-type": "cluster-health", "index": "yellow-*",
                                             "request-params": {"wait_for_status": "green", "timeout": "1s",
                                                                "wait_for_no_relocating_shards": "true"}}}
    track = write_track(tmp_path / "t", [*setup, check, strict],
                        indices=[{"name": "yellow-1", "body": "index.json"}])
    (track / "index.json").write_text(json.dumps({"settings": {"index.number_of_replicas": 1}}))
    assert race(f"--track-path={track}", f"--target-hosts={es_target}") == 4  # its task fails every request on purpose: not measured (docs: exit codes)
    _, _, df = stored()
    by = df.set_index("task")
    assert bool(by.loc["health", "success"]) is True
    green = str(by.loc["green", "error"])
    assert bool(by.loc["green", "success"]) is False and "cluster health is yellow, expected green" in green, green
    assert "a second node for the index's replicas" in green  # one node cannot place a replica: said why
