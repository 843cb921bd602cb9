"""Exit codes a scheduler can use (docs/guide/failures.md#exit-codes): a race that ran to its end but measured
nothing of a task exits 4, one whose error rate is over --max-error-rate exits 5, a clean one 0; bad thresholds
are one line; an experiment exits 4 when a race of its run measured nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.cli import main
from bench.results.exit_status import (
    EXIT_ERROR_RATE,
    EXIT_OK,
    EXIT_UNMEASURED,
    over_error_rate,
    parse_error_rate,
    run_exit_code,
    unmeasured,
)
from bench.results.stats import ThroughputStats
from bench.results.summary import Summary, TaskSummary
from bench.util.errors import ConfigError
from tests.race.test_race import write_track


def _task(name: str, requests: int, failed: int, measured: bool = True) -> TaskSummary:
    return TaskSummary(task=name, operation_type="search", unit="ops", requests=requests, failed_requests=failed,
                       error_rate=failed / requests if requests else 0.0,
                       throughput=ThroughputStats(min=1, mean=1, median=1, max=1, unit="ops/s") if measured else None,
                       latency={50.0: 1.0} if measured else {})


def test_unmeasured_tasks_and_extension_reasons_come_before_the_error_rate() -> None:
    clean = Summary(tasks=[_task("a", 100, 0)])
    assert run_exit_code(clean, 0.0) == (EXIT_OK, None)
    assert unmeasured(None) == ["no request was measured (no samples stored)"]
    dead = Summary(tasks=[_task("a", 100, 0), _task("b", 12, 12, measured=False), _task("c", 0, 0, False)])
    code, line = run_exit_code(dead, 0.5)
    assert code == EXIT_UNMEASURED and line is not None
    assert "every request of task 'b' failed (12 of 12)" in line and "task 'c' has only warmup samples" in line
    ccr = Summary(tasks=[_task("a", 100, 0)], unmeasured=["CCR: sync failed 1 of 1 time(s)"])
    assert run_exit_code(ccr, None)[0] == EXIT_UNMEASURED
    # A bulk whose items partly failed counts every request failed, yet it measured: a rate, not "unmeasured".
    partial = Summary(tasks=[_task("bulk", 2, 2)])
    assert unmeasured(partial) == []
    assert run_exit_code(partial, None) == (EXIT_OK, None)
    assert run_exit_code(partial, 0.99)[0] == EXIT_ERROR_RATE
    # A task kept out of reporting (Rally's admin operations) succeeded without figures: measured as asked.
    assert unmeasured(Summary(tasks=[_task("drop-ds", 1, 0, measured=False)])) == []
    assert over_error_rate(Summary(tasks=[_task("a", 100, 1)]), 0.01) == []  # 1 % is not over 1 %
    assert over_error_rate(Summary(tasks=[_task("a", 100, 2)]), 0.01) == [
        "task 'a' error rate 2.00 % (2 of 100 requests) is over --max-error-rate 1 %"]


@pytest.mark.parametrize("text, rate", [("1%", 0.01), ("0.01", 0.01), ("0", 0.0), ("100%", 1.0), (".5", 0.5)])
def test_error_rates_are_read_as_shares_or_percentages(text: str, rate: float) -> None:
    assert parse_error_rate(text) == pytest.approx(rate)


@pytest.mark.parametrize("text", ["abc", "2", "150%", "-1"])
def test_a_bad_max_error_rate_is_one_line_before_anything_starts(text: str, capsys) -> None:
    with pytest.raises(ConfigError):
        parse_error_rate(text)
    rc = main(["--quiet", "race", "--track=geopoint", "--test-mode", "--target-hosts=127.0.0.1:1",
               f"--max-error-rate={text}"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and f"--max-error-rate={text}" in err and "Traceback" not in err


def _bulk_with_item_failures(tmp_path: Path) -> Path:
    data = tmp_path / "docs.json"
    data.write_text("".join(json.dumps({"n": "not-a-number" if i % 4 == 0 else i}) + "\n" for i in range(100)))
    index = f"typed-{tmp_path.name.lower()}"
    track = write_track(
        tmp_path / "t",
        [{"operation": {"name": "del", "operation-type": "delete-index"}},
         {"operation": {"name": "create", "operation-type": "create-index"}},
         {"operation": {"name": "load", "operation-type": "bulk", "bulk-size": 50}, "clients": 1},
         {"operation": {"name": "clean", "operation-type": "delete-index"}}],
        indices=[{"name": index, "body": "index.json"}],
        corpora=[{"name": "c", "documents": [{"source-file": str(data), "document-count": 100,
                                              "target-index": index}]}])
    (track / "index.json").write_text(json.dumps({"settings": {"number_of_shards": 1, "number_of_replicas": 0},
                                                  "mappings": {"properties": {"n": {"type": "long"}}}}))
    return track


def test_max_error_rate_fails_a_race_with_failed_requests_and_keeps_the_trial(tmp_path, es_target, capsys) -> None:
    from bench.trials.sqlite import TrialStore

    track = _bulk_with_item_failures(tmp_path)
    # Without a threshold failed requests are reported, not an exit code (Rally's meaning).
    assert main(["--quiet", "race", f"--track-path={track}", f"--target-hosts={es_target}"]) == EXIT_OK
    capsys.readouterr()
    rc = main(["--quiet", "race", f"--track-path={track}", f"--target-hosts={es_target}", "--max-error-rate=1%"])
    err = capsys.readouterr().err
    assert rc == EXIT_ERROR_RATE
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "task 'load' error rate 100.00 % (2 of 2 requests) is over --max-error-rate 1 %" in \
        lines[0] and "(exit 5)" in lines[0]
    with TrialStore() as store:
        newest = store.list_trials(1)[0]
        assert newest.status == "complete" and newest.options["max_error_rate"] == 0.01
        assert len(store.samples(newest.id)) > 0


def test_an_experiment_whose_race_measured_nothing_exits_4(tmp_path, es_target, capsys) -> None:
    broken = write_track(tmp_path / "t", [
        {"operation": {"name": "probe", "operation-type": "raw-request", "path": "/_no_such_endpoint"},
         "iterations": 3}])
    exp = tmp_path / "nightly.yml"
    exp.write_text(f"name: nightly\nrepetitions: 1\nrace:\n  track-path: {broken}\n  target-hosts: {es_target}\n"
                   "variants:\n  only: {}\n")
    rc = main(["--quiet", "experiment", str(exp)])
    out = capsys.readouterr().out
    assert rc == EXIT_UNMEASURED, out
    assert "error: only#1 (trial " in out and "every request of task 'probe' failed (3 of 3)" in out
