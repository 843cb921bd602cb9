"""The study's CCR drill rows (bootstrap time to syncing and MB/s, failover RTO and RPO): read from each trial's
drills section, one row each after the throughput rows, judged in the direction compare gives them."""

from __future__ import annotations

from datetime import UTC, datetime

from bench.ccr.drill_figures import MB, BootstrapFigures, FailoverFigures
from bench.ccr.drill_section import DRILLS_SECTION, DrillsSection
from bench.compare import Side, TrialData
from bench.race.experiment import StudySpec
from bench.reporting.study import render_study_markdown, study_table
from bench.results.summary import Summary
from bench.trials.model import TrialInfo


def _trial(i: int, seconds: float, rto: float | None, rpo: int) -> TrialData:
    boot = BootstrapFigures(task="boot", cluster="follower", index="logs", leader_cluster="leader",
                            leader_index="logs", seconds_to_syncing=seconds, recovered_bytes=40 * MB,
                            mb_s=40 / seconds, leader_cpu_pct=20.0)
    drill = FailoverFigures(task="cut", mode="cut-link", cluster="follower", index="logs", leader_cluster="leader",
                            leader_index="logs", rto_s=rto, rpo_ops=rpo,
                            error=None if rto is not None else "the follower accepted no write within 120 s")
    section = DrillsSection(bootstrap=[boot], failover=[drill])
    info = TrialInfo(id=f"t{i:07d}", status="complete", track="http_logs", challenge="x",
                     start_time=datetime(2026, 11, 28, tzinfo=UTC))
    return TrialData(info=info, summary=Summary(sections={DRILLS_SECTION: section.model_dump(mode="json")}))


def test_drill_rows_line_up_and_are_judged_like_compare() -> None:
    small = [_trial(i, 4.0 + 0.1 * i, 1.0 + 0.05 * i, 100 + i) for i in range(3)]
    large = [_trial(10 + i, 2.0 + 0.1 * i, 1.0 + 0.05 * i, 100 + i) for i in range(3)]
    table = study_table("bootstrap-chunks", "run1", StudySpec(), [Side(label="1mb", selector="a", trials=small),
                                                                   Side(label="8mb", selector="b", trials=large)])
    rows = {r.label: r for r in table.rows}
    syncing = rows["CCR bootstrap: time to syncing"]
    assert [round(c.value or 0, 2) for c in syncing.cells] == [4.1, 2.1]
    assert syncing.higher_is_better is False and syncing.cells[1].verdict == "improvement"
    rate = rows["CCR bootstrap: transfer rate"]
    assert rate.higher_is_better is True and rate.cells[1].verdict == "improvement"
    assert rows["CCR failover: RTO"].cells[1].verdict in ("no change", "within noise")
    assert [c.value for c in rows["CCR failover: RPO"].cells] == [101.0, 101.0]
    md = render_study_markdown(table)
    assert "| CCR failover: RTO | s | 1.05 | 1.05 |" in md


def test_a_failed_drill_gives_the_study_no_rto() -> None:
    trials = [_trial(0, 4.0, None, 0)]
    table = study_table("s", "r", StudySpec(), [Side(label="only", selector="a", trials=trials)])
    labels = [r.label for r in table.rows]
    assert "CCR failover: RTO" not in labels and "CCR failover: RPO" not in labels
    assert "CCR bootstrap: time to syncing" in labels
