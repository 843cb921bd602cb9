"""Several followers of one leader, pure parts: a challenge written for the clusters ``leader`` and ``follower``
fans out over the race's follower clusters (bench/ccr/followers.py), and the study reads the slowest follower's
catch-up and each follower's lag (bench/reporting/study_followers.py)."""

from __future__ import annotations

import pytest

from bench.ccr.followers import expand_for_followers, follower_tasks
from bench.ccr.prepare import plan_ccr
from bench.ccr.section import CatchUp, CcrSection, FollowerSection
from bench.race.experiment import StudySpec
from bench.reporting.study import trial_study_values
from bench.reporting.study_followers import catch_up
from bench.results.summary import Summary, TaskSummary
from bench.track.loader import find_track, load_track
from bench.track.model import Parallel
from bench.util.errors import ConfigError

FOLLOWERS = ["follower-1", "follower-2", "follower-3"]


@pytest.mark.parametrize("name,index", [("http_logs", "logs"), ("geopoint", "osmgeopoints"), ("pmc", "pmc"),
                                        ("eventdata", "elasticlogs")])
def test_every_follower_task_runs_on_each_follower_side_by_side(name: str, index: str) -> None:
    track = load_track(find_track(name, None), {})
    challenge = track.challenge("ccr")
    names = ["leader", *FOLLOWERS]
    with pytest.raises(ConfigError, match="'follower', which is not part of this race"):
        plan_ccr(track, challenge, names)  # as written, the challenge needs a cluster named follower
    before = [t.name for t in follower_tasks(challenge)]
    expand_for_followers(challenge, FOLLOWERS)
    plan = plan_ccr(track, challenge, names)
    assert plan is not None
    assert [(f.follower_cluster, f.follower_index, f.leader_cluster) for f in plan.follows] == \
        [(c, index, "leader") for c in FOLLOWERS]
    assert plan.followers == FOLLOWERS and plan.leaders == ["leader"]
    # Each task on 'follower' became one parallel step of its copies, named after their cluster.
    steps = [s for s in challenge.schedule if isinstance(s, Parallel)]
    assert [[t.name for t in s.tasks] for s in steps] == [[f"{n}-{c}" for c in FOLLOWERS] for n in before]
    assert all(t.operation.params["cluster"] == c for s in steps for t, c in zip(s.tasks, FOLLOWERS))
    # The leader's tasks are untouched and the copies do not share parameters.
    assert [t.name for t in challenge.tasks() if t.operation.params.get("cluster") == "leader"] == \
        ["delete-leader-index", "create-leader-index", "check-leader-health", "index-append"]
    steps[0].tasks[0].operation.params["x"] = 1
    assert "x" not in steps[0].tasks[1].operation.params


def test_a_task_inside_a_parallel_step_is_copied_in_place() -> None:
    track = load_track(find_track("http_logs", None), {})
    challenge = track.challenge("ccr")
    wait = next(s for s in challenge.schedule if not isinstance(s, Parallel) and s.name == "wait-for-followers-to-sync")
    challenge.schedule = [Parallel(tasks=[wait, track.challenge("baseline").tasks()[0]])]
    expand_for_followers(challenge, ["follower-1", "follower-2"])
    [step] = challenge.schedule
    assert isinstance(step, Parallel)
    assert [t.name for t in step.tasks] == ["wait-for-followers-to-sync-follower-1",
                                            "wait-for-followers-to-sync-follower-2", "delete-index"]


def _summary(waits: dict[str, float | None]) -> Summary:
    tasks = [TaskSummary(task=t, operation_type="wait-for-followers-to-sync", unit="ops",
                         service_time={100.0: v} if v is not None else {}, requests=1,
                         failed_requests=0 if v is not None else 1) for t, v in waits.items()]
    section = CcrSection(
        followers=[FollowerSection(cluster=f"follower-{i}", index="logs", lag_ops_max=100.0 * i, lag_s_p99=1.5 * i,
                                   lag_samples=3) for i in (1, 2)],
        catch_up=[CatchUp(task=t, service_time_ms={100.0: v} if v is not None else {}, requests=1,
                          failed=0 if v is not None else 1) for t, v in waits.items()])
    return Summary(tasks=tasks, sections={"ccr": section.model_dump(mode="json")})


def test_the_study_takes_the_slowest_followers_catch_up_and_each_followers_lag() -> None:
    name = "wait-for-followers-to-sync"
    summary = _summary({f"{name}-follower-1": 800.0, f"{name}-follower-2": 1200.0})
    assert catch_up(summary, name) == (1200.0, "ms")
    assert catch_up(summary, None) == (1200.0, "ms")
    values = trial_study_values(summary, "2-followers", StudySpec(sync_task=name))
    assert values["100th percentile CCR catch-up time (CCR catch-up)"] == (1200.0, "ms")
    assert values["Max CCR lag [follower-1/logs]"][0] == 100.0
    assert values["Max CCR lag [follower-2/logs]"][0] == 200.0
    assert values["99th percentile CCR lag time [follower-2/logs]"][0] == 3.0


def test_no_catch_up_when_one_followers_wait_failed() -> None:
    name = "wait-for-followers-to-sync"
    summary = _summary({f"{name}-follower-1": 800.0, f"{name}-follower-2": None})
    # The other follower alone would understate the catch-up of the set: no value rather than a wrong one.
    assert catch_up(summary, name) is None
    assert "100th percentile CCR catch-up time (CCR catch-up)" not in trial_study_values(
        summary, "2-followers", StudySpec(sync_task=name))
