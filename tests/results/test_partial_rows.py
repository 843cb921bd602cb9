"""Rows computed from incomplete telemetry say so in every format: a follower paused for part of the race has its
CCR lag rows marked partial (its maximum a lower bound, "≥") in the table, markdown, CSV, JSON, the HTML and
markdown reports and compare, which shows them without judging them; so are the rows of a node missing from some
node-stats samples (down, restarting), whose counters lose what happened meanwhile."""

from __future__ import annotations

import csv
import io
import json
import re

import pytest

from bench.cli import main
from bench.results.summary import Summary
from bench.telemetry import attach_telemetry
from bench.telemetry.section import lag_partial
from bench.trials.sqlite import TelemetryRow, TrialInfo, TrialStore, utcnow

REASON = "lag unknown in 2 of 5 samples: follower paused, absent or not replicating"


def _ccr_rows(lags: list[int | None]) -> list[TelemetryRow]:
    """One ccr-stats sample per second: a lag, or None for a sample in which the follower was paused."""
    rows = []
    for t, lag in enumerate(lags):
        if lag is None:
            rows.append(TelemetryRow(t, "follower", "logs", "ccr-stats", "paused", 1.0))
        else:
            rows += [TelemetryRow(t, "follower", "logs", "ccr-stats", "lag_ops", float(lag)),
                     TelemetryRow(t, "follower", "logs", "ccr-stats", "lag_seconds", lag / 1000)]
        rows.append(TelemetryRow(t, "follower", "", "ccr-stats", "_sample", 1.0))
    return rows


def _trial(store: TrialStore, lags: list[int | None]) -> str:
    info = TrialInfo(id=f"{len(store.list_trials()) + 1}" * 32, track="t", challenge="c", start_time=utcnow())
    store.create_trial(info)
    store.add_telemetry(info.id, _ccr_rows(lags))
    summary = attach_telemetry(Summary(), store.telemetry(info.id))
    assert summary is not None
    store.set_summary(info.id, summary)
    store.finish_trial(info.id, "complete")
    return info.id


@pytest.fixture
def trials() -> tuple[str, str]:
    with TrialStore() as store:
        clean = _trial(store, [100, 200, 300, 400, 500])
        paused = _trial(store, [100, 13_934, None, None, 900])
    return clean, paused


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert main(["--quiet", *args]) == 0
    out = capsys.readouterr().out
    # bench show's first line names the trial before a human-readable report; json and csv are the document alone
    machine = any(a in args for a in ("--report-format=json", "--report-format=csv"))
    return out.split("\n", 1)[1] if args[0] == "show" and "--report-format" in " ".join(args) and not machine else out


def test_the_reason_counts_the_unknown_samples() -> None:
    assert lag_partial(0, 5) is None
    assert lag_partial(2, 3) == REASON
    assert lag_partial(2, 0) == "lag unknown in 2 samples: follower paused, absent or not replicating"


def test_partial_lag_rows_are_marked_in_every_trial_format(trials, capsys, tmp_path) -> None:
    clean, paused = trials
    table = _cli(capsys, "show", paused, "--all")
    assert re.search(r"Max CCR lag\s+follower/logs\s+≥ 13,934.00 \(partial: " + re.escape(REASON), table), table
    assert f"900.00 (partial: {REASON})" in table  # a median is partial too, not a bound
    assert "≥" not in _cli(capsys, "show", clean, "--all") and "partial" not in _cli(capsys, "show", clean, "--all")
    assert f"≥ 13,934.00 (partial: {REASON})" in _cli(capsys, "show", paused, "--report-format=markdown")
    data = json.loads(_cli(capsys, "show", paused, "--report-format=json"))
    [row] = [r for r in data["rows"] if r["metric"] == "Max CCR lag"]
    assert row == {"metric": "Max CCR lag", "task": "follower/logs", "value": 13934.0, "unit": "ops",
                   "partial": REASON}
    [clean_row] = [r for r in json.loads(_cli(capsys, "show", clean, "--report-format=json"))["rows"]
                   if r["metric"] == "Max CCR lag"]
    assert "partial" not in clean_row
    rows = list(csv.DictReader(io.StringIO(_cli(capsys, "show", paused, "--report-format=csv"))))
    [row] = [r for r in rows if r["Metric"] == "Max CCR lag"]
    assert row["Value"] == "13934.0" and row["Partial"] == REASON
    for fmt in ("markdown", "html"):
        out = tmp_path / f"r.{fmt}"
        assert main(["--quiet", "report", paused, f"--format={fmt}", f"--output={out}"]) == 0
        text = out.read_text()
        assert "≥ 13,934.00 (partial: " in text and REASON in text, fmt


def test_compare_shows_partial_rows_without_judging_them(trials, capsys) -> None:
    clean, paused = trials
    data = json.loads(_cli(capsys, "compare", clean, paused, "--format=json"))
    records = data["rows"] if isinstance(data, dict) else data
    [row] = [r for r in records if r["metric"] == "Max CCR lag"]
    assert row["partial"] == f"{paused[:8]}: {REASON}" and row["result"] == "not judged"
    assert row["task"] == f"follower/logs [partial: {paused[:8]}]"
    text = _cli(capsys, "compare", clean, paused, "--all")
    assert "Partial rows (computed from incomplete telemetry" in text and f"[partial: {paused[:8]}]" in text
    rows = list(csv.reader(io.StringIO(_cli(capsys, "compare", clean, paused, "--format=csv"))))
    assert any("Max CCR lag" in r and any("[partial:" in c for c in r) for r in rows)


NODE_REASON = ("node absent from 2 of 5 node-stats samples (down or not answering): counts miss what it did "
               "meanwhile")


def _node_rows(down: set[int]) -> list[TelemetryRow]:
    """node-stats samples of a two-node cluster, one a second; node-1 is missing from the samples in ``down``
    and comes back restarted (its GC counter starts again from zero)."""
    rows = []
    for t in range(5):
        rows.append(TelemetryRow(t, "default", "node-0", "node-stats", "jvm.gc.collectors.young.collection_count",
                                 10.0 * t))
        if t not in down:
            count = 10.0 * t if not down or t < min(down) else 1.0 * (t - max(down))
            rows.append(TelemetryRow(t, "default", "node-1", "node-stats",
                                     "jvm.gc.collectors.young.collection_count", count))
        rows.append(TelemetryRow(t, "default", "", "node-stats", "_sample", 1.0))
    return rows


def _node_trial(store: TrialStore, down: set[int]) -> str:
    info = TrialInfo(id=f"{len(store.list_trials()) + 1}" * 32, track="t", challenge="c", start_time=utcnow())
    store.create_trial(info)
    store.add_telemetry(info.id, _node_rows(down))
    summary = attach_telemetry(Summary(), store.telemetry(info.id))
    assert summary is not None
    store.set_summary(info.id, summary)
    store.finish_trial(info.id, "complete")
    return info.id


def test_counts_of_a_node_that_was_down_are_partial_in_every_format(capsys, tmp_path) -> None:
    with TrialStore() as store:
        whole = _node_trial(store, set())
        down = _node_trial(store, {2, 3})
    table = _cli(capsys, "show", down, "--all")
    # node-1's count is a lower bound of its work: the samples while it was down (and its restart) are lost.
    assert re.search(r"Young GC count\s+default/node-1\s+\S+ \(partial: " + re.escape(NODE_REASON), table), table
    assert re.search(r"Young GC count\s+default/node-0\s+40.00\s*$", table, re.M), table
    assert "partial" not in _cli(capsys, "show", whole, "--all")
    assert f"(partial: {NODE_REASON})" in _cli(capsys, "show", down, "--report-format=markdown")
    data = json.loads(_cli(capsys, "show", down, "--report-format=json"))
    by_node = {r["task"]: r for r in data["rows"] if r["metric"] == "Young GC count"}
    assert by_node["default/node-1"]["partial"] == NODE_REASON and "partial" not in by_node["default/node-0"]
    rows = list(csv.DictReader(io.StringIO(_cli(capsys, "show", down, "--report-format=csv"))))
    assert {r["Task"]: r["Partial"] for r in rows if r["Metric"] == "Young GC count"} == {
        "default/node-0": "", "default/node-1": NODE_REASON}
    for fmt in ("markdown", "html"):
        out = tmp_path / f"r.{fmt}"
        assert main(["--quiet", "report", down, f"--format={fmt}", f"--output={out}"]) == 0
        assert NODE_REASON in out.read_text(), fmt
    capsys.readouterr()
    compared = json.loads(_cli(capsys, "compare", whole, down, "--format=json"))
    records = compared["rows"] if isinstance(compared, dict) else compared
    [row] = [r for r in records if r["metric"] == "Young GC count" and r["task"].startswith("default/node-1")]
    assert row["result"] == "not judged"  # 1 GC against 40 says nothing: the node was down
