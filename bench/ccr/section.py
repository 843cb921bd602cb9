"""The CCR section of a race summary: per follower index, the lag during the run (from the ccr-stats
telemetry: median / p99 / max in operations and seconds), the catch-up time (wait-for-followers-to-sync's
service time), read/write exceptions, and the final document counts of leader and follower -- which must
match once the follower has caught up; a mismatch is flagged in the notes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from pydantic import BaseModel

from bench.ccr.engine import PAUSED_ERROR
from bench.results.sections import SectionTable
from bench.results.summary import MetricRow, Summary, percentile_label
from bench.telemetry.over_time import Window, basis, clock
from bench.telemetry.section import SECTION as TELEMETRY_SECTION
from bench.telemetry.section import add_follower_lag_rows
from bench.track.model import Task

SYNC_OPERATION = "wait-for-followers-to-sync"
SECTION = "ccr"  # its name among a summary's sections


class Follow(Protocol):
    """One follower index of the plan (``bench.ccr.prepare.FollowSpec``)."""

    @property
    def follower_cluster(self) -> str: ...
    @property
    def follower_index(self) -> str: ...
    @property
    def leader_cluster(self) -> str | None: ...
    @property
    def leader_index(self) -> str: ...


class Plan(Protocol):
    """What the section needs of a race's CCR plan (``bench.ccr.prepare.CcrPlan``, which uses this module)."""

    @property
    def tasks(self) -> list[Task]: ...
    @property
    def follows(self) -> Sequence[Follow]: ...


class CatchUp(BaseModel):
    task: str
    cluster: str = ""
    service_time_ms: dict[float, float] = {}  # percentile -> ms
    requests: int = 0
    failed: int = 0
    paused: int = 0  # of the failed waits, those that ended because a follower was paused by a user


class FollowerSection(BaseModel):
    cluster: str
    index: str
    leader_cluster: str | None = None
    leader_index: str | None = None
    lag_ops_median: float | None = None
    lag_ops_p99: float | None = None
    lag_ops_max: float | None = None
    lag_s_median: float | None = None
    lag_s_p99: float | None = None
    lag_s_max: float | None = None
    read_exceptions: float | None = None
    failed_read_requests: float | None = None
    failed_write_requests: float | None = None
    samples_without_checkpoints: int = 0
    paused_samples: int = 0  # of those, the samples in which the follower was paused
    lag_samples: int = 0  # samples with a known lag in operations (a lag time may still be only a lower bound)
    lag_over_time: list[Window] = []  # per hour, or per tenth of a shorter run (bench.telemetry.over_time)
    leader_docs: int | None = None
    follower_docs: int | None = None

    @property
    def docs_match(self) -> bool | None:
        if self.leader_docs is None or self.follower_docs is None:
            return None
        return self.leader_docs == self.follower_docs


class CcrSection(BaseModel):
    followers: list[FollowerSection] = []
    catch_up: list[CatchUp] = []
    notes: list[str] = []
    # What replication did not do, one reason each: the race measured no replication (Summary.unmeasured).
    unmeasured: list[str] = []


def build_section(plan: Plan, summary: Summary, counts: dict[tuple[str, str], int | None]) -> CcrSection:
    """Pure: the plan's followers, the summary's telemetry and tasks, and the final counts."""
    lags = {(f.get("cluster"), f.get("index")): f for f in summary.section(TELEMETRY_SECTION).get("followers", [])}
    section = CcrSection()
    seen: set[tuple[str, str]] = set()
    for f in plan.follows:
        key = (f.follower_cluster, f.follower_index)
        if key in seen:
            continue
        seen.add(key)
        lag = lags.get(key, {})
        section.followers.append(FollowerSection(
            cluster=f.follower_cluster, index=f.follower_index, leader_cluster=f.leader_cluster,
            leader_index=f.leader_index,
            lag_ops_median=lag.get("lag_ops_median"), lag_ops_p99=lag.get("lag_ops_p99"),
            lag_ops_max=lag.get("lag_ops_max"), lag_s_median=lag.get("lag_s_median"),
            lag_s_p99=lag.get("lag_s_p99"), lag_s_max=lag.get("lag_s_max"),
            read_exceptions=lag.get("read_exceptions"), failed_read_requests=lag.get("failed_read_requests"),
            failed_write_requests=lag.get("failed_write_requests"),
            samples_without_checkpoints=int(lag.get("missing_samples", 0) or 0),
            paused_samples=int(lag.get("paused_samples", 0) or 0),
            lag_samples=int(lag.get("lag_samples", 0) or 0), lag_over_time=lag.get("lag_over_time") or [],
            leader_docs=counts.get((f.leader_cluster, f.leader_index)) if f.leader_cluster else None,
            follower_docs=counts.get(key)))
    # followers ccr-stats saw that no ccr-follow task named (auto-follow)
    for (cluster, index), lag in lags.items():
        if (cluster, index) not in seen:
            section.followers.append(FollowerSection(
                cluster=str(cluster), index=str(index), lag_ops_median=lag.get("lag_ops_median"),
                lag_ops_p99=lag.get("lag_ops_p99"), lag_ops_max=lag.get("lag_ops_max"),
                lag_s_median=lag.get("lag_s_median"), lag_s_p99=lag.get("lag_s_p99"),
                lag_s_max=lag.get("lag_s_max"), read_exceptions=lag.get("read_exceptions"),
                failed_read_requests=lag.get("failed_read_requests"),
                failed_write_requests=lag.get("failed_write_requests"),
                samples_without_checkpoints=int(lag.get("missing_samples", 0) or 0),
                paused_samples=int(lag.get("paused_samples", 0) or 0),
                lag_samples=int(lag.get("lag_samples", 0) or 0), lag_over_time=lag.get("lag_over_time") or []))
    sync_tasks = {t.name: t for t in plan.tasks if t.operation.operation_type == SYNC_OPERATION}
    for t in summary.tasks:
        if t.operation_type == SYNC_OPERATION:
            task = sync_tasks.get(t.task)
            # The task's percentiles include failed waits (a timeout's duration): a catch-up time only when
            # every wait of the task synced.
            section.catch_up.append(CatchUp(task=t.task, cluster=str(task.operation.params.get("cluster", ""))
                                            if task else "",
                                            service_time_ms={} if t.failed_requests else t.service_time,
                                            requests=t.requests, failed=t.failed_requests,
                                            paused=t.errors_by_type.get(PAUSED_ERROR, 0)))
    for c in section.catch_up:
        if c.failed:
            why = _why_not_caught_up(c)
            section.unmeasured.append(f"CCR: {c.task} failed {c.failed} of {c.requests} time(s): {why}")
            section.notes.append(f"CCR: {c.task} failed {c.failed} of {c.requests} time(s): {why} (see the task's "
                                 f"errors); no catch-up time is reported.")
    for fs in section.followers:
        if fs.docs_match is False:
            synced = section.catch_up and not any(c.failed for c in section.catch_up)
            if synced:  # without a sync wait a follower ends behind by its lag, as it should
                section.unmeasured.append(f"CCR: follower {fs.cluster}/{fs.index} has {fs.follower_docs:,} documents "
                                          f"after a successful sync wait, its leader {fs.leader_docs:,}")
            section.notes.append(
                f"CCR: follower {fs.cluster}/{fs.index} has {fs.follower_docs:,} documents, leader "
                f"{fs.leader_cluster}/{fs.leader_index} has {fs.leader_docs:,}"
                + (" after wait-for-followers-to-sync: MISMATCH." if synced else " (no successful sync wait)."))
        if fs.lag_ops_max is None and fs.samples_without_checkpoints:
            section.unmeasured.append(f"CCR: the lag of follower {fs.cluster}/{fs.index} is unknown in all of its "
                                      f"{fs.samples_without_checkpoints} samples ({_why_no_lag(fs)})")
            section.notes.append(f"CCR: no lag for {fs.cluster}/{fs.index}: {_why_no_lag(fs)} in all of its "
                                 f"{fs.samples_without_checkpoints} ccr-stats samples.")
        elif fs.lag_ops_max is None and fs.leader_cluster is not None:
            section.notes.append(
                f"CCR: no lag samples for {fs.cluster}/{fs.index} (ccr-stats telemetry off or failing).")
    return section


def _why_not_caught_up(c: CatchUp) -> str:
    if c.paused and c.paused == c.failed:
        return "a follower was paused by a user, so the followers could not catch up"
    if c.paused:
        return f"the followers did not catch up ({c.paused} time(s) because a follower was paused by a user)"
    return "the followers did not catch up"


def _why_no_lag(fs: FollowerSection) -> str:
    """Why a follower's lag is unknown, as the ccr-stats samples said."""
    if fs.paused_samples >= fs.samples_without_checkpoints:
        return "the follower was paused"
    if fs.paused_samples:
        return f"the follower was paused in {fs.paused_samples} of them, absent or not replicating in the others"
    return "the follower was absent from the stats or not replicating"


def ccr_rows(data: dict[str, Any]) -> list[MetricRow]:
    """Report rows of a stored CCR section; the Task column names cluster/index or the sync task."""
    if not data:
        return []
    s = CcrSection.model_validate(data)
    rows: list[MetricRow] = []

    def add(metric: str, scope: str, value: float | None, unit: str, partial: str | None = None) -> None:
        if value is not None:
            rows.append(MetricRow(metric=metric, task=scope, value=value, unit=unit, partial=partial))

    for f in s.followers:
        scope = f"{f.cluster}/{f.index}"
        add_follower_lag_rows(add, scope, f, f.samples_without_checkpoints)
        if f.leader_cluster:
            add("CCR leader docs", f"{f.leader_cluster}/{f.leader_index}", f.leader_docs, "")
        add("CCR follower docs", scope, f.follower_docs, "")
        if f.docs_match is not None:
            rows.append(MetricRow(metric="CCR doc counts match", task=scope, value=int(f.docs_match), unit="bool"))
    for c in s.catch_up:
        for p, v in sorted(c.service_time_ms.items()):
            add(f"{percentile_label(float(p))} percentile CCR catch-up time", c.task, v, "ms")
        if c.failed:
            add("CCR catch-up failures", c.task, c.failed, "")
    return rows


LAG_TABLE_HEADERS = ["From", "To", "Lag samples", "Lag unknown", "p50 s", "p90 s", "p99 s", "Max s"]


def lag_table(name: str, ws: list[Window]) -> SectionTable:
    """A follower's lag time window by window; a window without a known lag says so instead of a number."""
    def cell(v: float | None, w: Window) -> str:
        if v is not None:
            return f"{v:,.2f}"
        return "unknown" if w.unknown else "no samples"

    return SectionTable(name=f"CCR lag time {basis(ws)}: {name}", headers=LAG_TABLE_HEADERS, rows=[
        [clock(w.start_s), clock(w.end_s), f"{w.samples:,}", f"{w.unknown:,}",
         *(cell(v, w) for v in (w.p50, w.p90, w.p99, w.max))] for w in ws])


def ccr_tables(data: dict[str, Any]) -> list[SectionTable]:
    """The lag over time of each follower (for reports: terminal with --all, markdown, HTML)."""
    if not data:
        return []
    s = CcrSection.model_validate(data)
    return [lag_table(f"{f.cluster}/{f.index}", f.lag_over_time) for f in s.followers if f.lag_over_time]


def is_ccr_telemetry_row(metric: str) -> bool:
    """The telemetry section's follower rows, which the CCR section repeats (shown once, in the CCR section)."""
    return "CCR" in metric


def is_ccr_headline_metric(metric: str) -> bool:
    """Lag (ops and time), catch-up time and failures, and whether follower and leader doc counts match."""
    return metric in {"Max CCR lag", "99th percentile CCR lag time", "100th percentile CCR catch-up time",
                      "CCR catch-up failures", "CCR doc counts match"}
