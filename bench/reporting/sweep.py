"""The follower settings sweep: each variant of a study with ``catch-up-within: N`` judged "caught up within N s
after indexing stopped" or "fell behind", in one table (the smoke test "the max_* defaults allow the follower to
always catch up", run over follower read/write settings).

The verdict is built on what ``wait-for-followers-to-sync`` measured (it starts when indexing has stopped and ends
when the follower has the leader's checkpoints as of then): a wait that synced in T s is "caught up in T s" when
T <= N, else "fell behind (caught up only after T s)"; a wait that timed out after X s (its failed request's
duration, X >= N) is "fell behind (not caught up after X s)". Anything else is said as what it is, never as a
time: a race that failed, a follower paused by a user, a step that failed before the wait (the settings were not
applied), a wait that gave up before N s. Pure: the loading is ``bench.reporting.sweep_load``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel

from bench.reporting.study import TableView
from bench.results.summary import Summary

SYNC_OPERATION = "wait-for-followers-to-sync"
# What the wait's runner (an extension) stores: its words when its timeout ends it, and the error type of a
# follower paused by a user. The core names no extension; tests check these against it.
TIMED_OUT = "did not catch up within"
PAUSED_ERROR = "ccr-follower-paused"
# Track params that carry follower settings (the built-in CCR challenges): shown per variant.
SETTINGS_PARAMS = ("follower_settings", "follow_parameters")
_PREFIX = "plugins.replication.follower."

Kind = Literal["caught up", "fell behind", "not judged", "failed"]


class SweepTrial(BaseModel):
    trial_id: str
    kind: Kind
    text: str
    seconds: float | None = None  # the catch-up time, or how long the wait ran before it gave up


class SweepRow(BaseModel):
    variant: str
    settings: str
    trials: list[SweepTrial]

    def verdict(self, within: float) -> str:
        kinds = [t.kind for t in self.trials]
        n = len(kinds)
        if n == 0:
            return "not judged: no trial of this variant was stored"
        if kinds.count("caught up") == n:
            return f"caught up within {within:g} s" + (f" (all {n} trials)" if n > 1 else "")
        parts = []
        for kind in ("fell behind", "failed", "not judged"):
            k = kinds.count(kind)
            if k:
                parts.append(f"{kind} in {k} of {n} trial(s)" if n > 1 else kind)
        return "; ".join(parts)


class SweepTable(BaseModel):
    experiment: str
    run_id: str
    within: float
    rows: list[SweepRow]


def settings_text(track_params: dict[str, Any], cars: list[str]) -> str:
    """The follower settings a trial ran with: its settings track params, and its cars beyond the defaults."""
    parts = []
    for param in SETTINGS_PARAMS:
        value = track_params.get(param)
        if isinstance(value, dict) and value:
            parts += [f"{str(k).removeprefix(_PREFIX)}={'default' if v is None else v}" for k, v in value.items()]
    extra = [c for c in cars if c not in ("defaults",) and not c.endswith("heap")]
    if extra:
        parts.append("car " + "+".join(extra))
    return ", ".join(parts) or "defaults"


def _failed_task(summary: Summary, sync_name: str) -> str | None:
    """A step other than the wait that failed: the trial did not run what the variant says."""
    for t in summary.tasks:
        if t.task != sync_name and t.failed_requests:
            msg = t.error_messages[0].message if t.error_messages else "no message"
            return f"task {t.task} failed {t.failed_requests} of {t.requests} request(s): {msg}"
    return None


def _timed_out(trial_id: str, message: str, waited: float | None, within: float) -> SweepTrial:
    if waited is None:
        return SweepTrial(trial_id=trial_id, kind="not judged",
                          text=f"the wait timed out but its duration was not stored ({message})")
    if waited < within:
        return SweepTrial(trial_id=trial_id, kind="not judged", seconds=waited,
                          text=f"the wait gave up after {waited:.1f} s, before {within:g} s: set its timeout "
                               f"(sync_timeout) above {within:g} s")
    return SweepTrial(trial_id=trial_id, kind="fell behind", seconds=waited,
                      text=f"fell behind (not caught up after {waited:.1f} s)")


def trial_verdict(trial_id: str, status: str, error: str | None, summary: Summary | None,
                  failed_wait_s: float | None, within: float, sync_task: str | None = None) -> SweepTrial:
    """One trial's verdict. ``failed_wait_s``: how long its failed sync wait ran (its stored request)."""
    def say(kind: Kind, text: str, seconds: float | None = None) -> SweepTrial:
        return SweepTrial(trial_id=trial_id, kind=kind, text=text, seconds=seconds)

    if status == "failed":
        return say("failed", f"race failed: {error or 'no error stored'}")
    if status != "complete":
        return say("not judged", f"race not finished ({status})")
    if summary is None:
        return say("not judged", "no summary stored")
    sync = next((t for t in summary.tasks if (t.task == sync_task if sync_task else t.operation_type == SYNC_OPERATION)),
                None)
    if sync is None:
        return say("not judged", f"no {sync_task or SYNC_OPERATION} task ran, so no catch-up was measured")
    before = _failed_task(summary, sync.task)
    if before is not None:
        return say("not judged", before)
    if sync.failed_requests:
        message = sync.error_messages[0].message if sync.error_messages else ""
        if sync.errors_by_type.get(PAUSED_ERROR):
            return say("not judged", "a follower was paused by a user, so it could not catch up")
        if TIMED_OUT in message:
            return _timed_out(trial_id, message, failed_wait_s, within)
        return say("failed", f"the wait failed: {message or 'no message'}")
    if summary.unmeasured:
        return say("not judged", summary.unmeasured[0])
    ms = sync.service_time.get(100.0)
    if ms is None:
        return say("not judged", "the wait stored no service time")
    secs = ms / 1000.0
    if secs <= within:
        return say("caught up", f"caught up in {secs:.1f} s", secs)
    return say("fell behind", f"fell behind (caught up only after {secs:.1f} s)", secs)


def sweep_view(table: SweepTable) -> TableView:
    n = table.within
    rows = [[r.variant, r.settings, "; ".join(t.text for t in r.trials) or "–", r.verdict(n)] for r in table.rows]
    return TableView(
        title=f"Follower settings sweep: {table.experiment}, run {table.run_id}",
        headers=["Variant", "Follower settings", "After indexing stopped (per trial)", f"Verdict (N = {n:g} s)"],
        rows=rows,
        notes=[f"Caught up: wait-for-followers-to-sync, which starts when indexing has stopped, reached the leader's "
               f"checkpoints within {n:g} s; fell behind: it needed longer, or its timeout ended it after at least "
               f"{n:g} s. Settings shown without the '{_PREFIX}' prefix; 'default' resets one to the engine's "
               "default."])
