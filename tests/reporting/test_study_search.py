"""The study's search rows (bench/reporting/study_search.py) and the built-in challenges they read: the search
task beside indexing has one name in the CCR challenge and its baseline, so the study and ``bench compare`` line
up the leader's search latency with the baseline's, and the follower's is the CCR variant's own."""

from __future__ import annotations

import pytest

from bench.compare.model import Side, TrialData
from bench.race.experiment import StudySpec
from bench.reporting.study import study_table
from bench.results.summary import Summary, TaskSummary
from bench.track.loader import find_track, load_track
from bench.trials.model import TrialInfo

SPEC = StudySpec.model_validate({"clusters": {"default": "leader"},
                                 "search-tasks": {"search": "leader", "search-follower": "follower"}})


@pytest.mark.parametrize("name", ["http_logs", "nginx"])
def test_with_search_challenges_search_each_cluster_while_indexing(name: str) -> None:
    track = load_track(find_track(name, None), {})

    def searches(challenge: str) -> list[tuple[str, str | None]]:
        return [(t.name, t.operation.params.get("cluster")) for t in track.challenge(challenge).tasks()
                if t.operation.operation_type == "search"]

    assert searches("ccr-with-search") == [("search", "leader"), ("search-follower", "follower")]
    assert searches("baseline-with-search") == [("search", None)]
    for challenge in ("ccr-with-search", "baseline-with-search"):
        [block] = [s for s in track.challenge(challenge).schedule if hasattr(s, "completed_by")]
        # searches run until indexing ends, at the target throughput
        assert block.completed_by == "index-append"
        assert all(t.target_throughput == 10 for t in block.tasks if t.operation.operation_type == "search")


def _side(label: str, *tasks: TaskSummary) -> Side:
    info = TrialInfo.model_validate({"id": f"{label}-1", "track": "t", "challenge": "c",
                                     "start_time": "2026-11-28T00:00:00Z"})
    return Side(label=label, selector=label, trials=[TrialData(info=info, summary=Summary(tasks=list(tasks)))])


def _search(name: str, p50: float, errors: float = 0.0) -> TaskSummary:
    return TaskSummary(task=name, operation_type="search", unit="ops", latency={50.0: p50, 90.0: p50 * 2},
                       error_rate=errors, requests=100)


def test_search_latency_rows_per_cluster_with_and_without_ccr() -> None:
    table = study_table("e", "r", SPEC, [_side("baseline", _search("search", 10.0)),
                                         _side("ccr", _search("search", 15.0), _search("search-follower", 4.0, 0.02))])
    rows = {r.label: r for r in table.rows}
    leader = rows["50th percentile latency (search) [default vs leader]"]
    assert [c.value for c in leader.cells] == [10.0, 15.0] and leader.cells[1].diff_pct == pytest.approx(50.0)
    assert leader.higher_is_better is False  # slower search is worse
    follower = rows["50th percentile latency (search) [follower]"]
    assert [c.value for c in follower.cells] == [None, 4.0] and follower.reference == "ccr"
    assert rows["Error rate (search) [follower]"].cells[1].value == pytest.approx(2.0)
    assert "90th percentile latency (search) [default vs leader]" in rows
    # a study without search-tasks has no search rows
    plain = study_table("e", "r", StudySpec(), [_side("baseline", _search("search", 10.0))])
    assert not any("search" in r.label for r in plain.rows)
