"""The follower settings sweep's verdicts (bench/reporting/sweep.py): what wait-for-followers-to-sync measured,
said as "caught up" or "fell behind" against N, and every other outcome said as what it is, never as a time. The
live sweep on the real pair is tests/ccr/test_settings_sweep.py; here the cases a pair cannot cheaply produce,
and ``bench experiment`` printing the table for races that failed or measured no catch-up."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

import bench.ccr.sync
from bench.ccr.engine import PAUSED_ERROR as ENGINE_PAUSED_ERROR
from bench.cli import main
from bench.reporting.sweep import PAUSED_ERROR, TIMED_OUT, SweepRow, settings_text, trial_verdict
from bench.results.summary import ErrorCount, Summary, TaskSummary
from benchmarks.nullsink import free_port, start_in_background
from tests.race.test_race import write_track

SYNC = "wait-for-followers-to-sync"
N = 60.0


def _summary(sync_ms: float | None = None, failed: str | None = None, error_type: str = "ccr",
             before_failed: bool = False, unmeasured: list[str] | None = None) -> Summary:
    tasks = [TaskSummary(task="put-follower-settings", operation_type="put-settings", unit="ops", requests=1,
                         failed_requests=int(before_failed),
                         error_messages=[ErrorCount(message="HTTP 400: unknown setting", count=1)]
                         if before_failed else [])]
    sync = TaskSummary(task=SYNC, operation_type=SYNC, unit="ops", requests=1)
    if failed is not None:
        sync = sync.model_copy(update={"failed_requests": 1, "errors_by_type": {error_type: 1},
                                       "error_messages": [ErrorCount(message=failed, count=1)]})
    elif sync_ms is not None:
        sync = sync.model_copy(update={"service_time": {100.0: sync_ms}})
    return Summary(tasks=[*tasks, sync], unmeasured=unmeasured or [])


def _verdict(summary: Summary | None, waited: float | None = None, status: str = "complete",
             error: str | None = None) -> tuple[str, str, float | None]:
    v = trial_verdict("t1", status, error, summary, waited, N)
    return v.kind, v.text, v.seconds


TIMEOUT_MSG = f"wait-for-followers-to-sync: followers on cluster follower {TIMED_OUT} 90 s: logs: checkpoint 4 of 9"


@pytest.mark.parametrize(("summary", "waited", "expected"), [
    (_summary(sync_ms=12_345.0), None, ("caught up", "caught up in 12.3 s", 12.345)),
    (_summary(sync_ms=75_000.0), None, ("fell behind", "fell behind (caught up only after 75.0 s)", 75.0)),
    (_summary(failed=TIMEOUT_MSG), 90.02, ("fell behind", "fell behind (not caught up after 90.0 s)", 90.02)),
    # a wait that gave up before N says nothing about N
    (_summary(failed=TIMEOUT_MSG), 5.0, ("not judged", "the wait gave up after 5.0 s, before 60 s: set its timeout "
                                         "(sync_timeout) above 60 s", 5.0)),
    (_summary(failed=TIMEOUT_MSG), None, ("not judged", f"the wait timed out but its duration was not stored "
                                          f"({TIMEOUT_MSG})", None)),
    (_summary(failed="follower logs was paused by a user", error_type=PAUSED_ERROR), 0.2,
     ("not judged", "a follower was paused by a user, so it could not catch up", None)),
    (_summary(failed="follower logs on cluster follower failed: shard failed"), 3.0,
     ("failed", "the wait failed: follower logs on cluster follower failed: shard failed", None)),
    # the settings were not applied: whatever the wait measured is not this variant's
    (_summary(sync_ms=1_000.0, before_failed=True), None,
     ("not judged", "task put-follower-settings failed 1 of 1 request(s): HTTP 400: unknown setting", None)),
    (_summary(sync_ms=1_000.0, unmeasured=["CCR: follower f/logs has 9 documents after a successful sync wait"]),
     None, ("not judged", "CCR: follower f/logs has 9 documents after a successful sync wait", None)),
    (Summary(tasks=[]), None, ("not judged", f"no {SYNC} task ran, so no catch-up was measured", None)),
])
def test_each_outcome_gets_its_verdict(summary: Summary, waited: float | None,
                                       expected: tuple[str, str, float | None]) -> None:
    assert _verdict(summary, waited) == expected


def test_a_failed_race_is_a_verdict_of_its_own() -> None:
    assert _verdict(None, status="failed", error="cluster follower: connection refused") == \
        ("failed", "race failed: cluster follower: connection refused", None)


def test_variant_verdict_counts_its_trials() -> None:
    caught = trial_verdict("a", "complete", None, _summary(sync_ms=1_000.0), None, N)
    behind = trial_verdict("b", "complete", None, _summary(failed=TIMEOUT_MSG), 90.0, N)
    assert SweepRow(variant="v", settings="", trials=[caught, caught]).verdict(N) == "caught up within 60 s (all 2 trials)"
    assert SweepRow(variant="v", settings="", trials=[caught, behind]).verdict(N) == "fell behind in 1 of 2 trial(s)"
    assert SweepRow(variant="v", settings="", trials=[]).verdict(N) == "not judged: no trial of this variant was stored"


def test_settings_text_names_the_variants_settings() -> None:
    assert settings_text({"follower_settings": {"plugins.replication.follower.index.ops_batch_size": 16,
                                                "plugins.replication.follower.concurrent_readers_per_shard": None}},
                         ["defaults", "512mheap"]) == "index.ops_batch_size=16, concurrent_readers_per_shard=default"
    assert settings_text({"follow_parameters": {"max_read_request_size": "32mb"}}, []) == "max_read_request_size=32mb"
    assert settings_text({}, ["defaults", "ccr-follower-small-reads"]) == "car ccr-follower-small-reads"
    assert settings_text({}, ["defaults"]) == "defaults"


def test_the_words_are_the_sync_runners_own() -> None:
    # the core names no extension: its copies of the runner's words must stay the runner's
    assert PAUSED_ERROR == ENGINE_PAUSED_ERROR
    source = re.sub(r'"\s*\n\s*f?"', "", inspect.getsource(bench.ccr.sync))  # its message's f-string, joined
    assert f"{TIMED_OUT} {{timeout:g}} s" in source


@pytest.mark.timeout(300)
def test_experiment_prints_the_sweep_for_races_that_failed_or_measured_no_catch_up(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    port, closed = free_port(), free_port()
    track = write_track(tmp_path / "track", [{"operation": {"name": "refresh", "operation-type": "refresh"}}])
    file = tmp_path / "sweep.yml"
    file.write_text(f"""
name: sweep-cli
race: {{test-mode: true}}
variants:
  no-sync: {{track-path: "{track}", target-hosts: "127.0.0.1:{port}"}}
  unreachable: {{track: nginx, challenge: ccr,
                 target-hosts: "leader:127.0.0.1:{closed},follower:127.0.0.1:{closed}"}}
study:
  catch-up-within: 30
""")
    procs = start_in_background(port)
    try:
        rc = main(["--quiet", "experiment", str(file)])
    finally:
        for p in procs:
            p.terminate()
    out = capsys.readouterr().out
    assert rc != 0, out  # a race failed
    table = out[out.index("## Follower settings sweep: sweep-cli"):]
    no_sync = next(line for line in table.splitlines() if line.startswith("| no-sync |"))
    assert no_sync.endswith(f"| no {SYNC} task ran, so no catch-up was measured | not judged |"), no_sync
    unreachable = next(line for line in table.splitlines() if line.startswith("| unreachable |"))
    assert "| race failed: " in unreachable and unreachable.endswith("| failed |"), unreachable
