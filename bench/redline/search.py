"""Which target throughput to try next, and what the steps so far say. Pure: outcomes in, a decision out.

Exponential phase: from the start target, multiply by ``factor`` while steps pass (divide while they fail) until
one passing and one failing target bracket the redline; binary phase: try the midpoint of the bracket until
(fail - pass) / pass is within the tolerance. The answer is the highest passing target below the lowest failing
one above it, so a noisy pass above a failure cannot raise it. A first step that fails is run once more before
the search goes down: it took the cluster's cold start (JIT, fresh index), which says nothing about the target;
where a target ran twice, its last outcome counts. It stops early at ``max_steps``, at the ``max``
target (the redline is above what was allowed) or when halving falls below ``MIN_TARGET`` (nothing passes).
"""

from __future__ import annotations

from pydantic import BaseModel

from bench.redline.objective import RedlineSpec

MIN_TARGET = 0.01  # requests/s: below this a step of a few seconds holds no request at all


class Outcome(BaseModel):
    target: float  # requests/s
    passed: bool


class Decision(BaseModel):
    next_target: float | None  # None: the search is over
    passed: float | None  # highest passing target below `failed` (the sustained redline), None if none passed
    failed: float | None  # lowest failing target above `passed`, None if none failed
    converged: bool  # bracketed within the tolerance
    reason: str  # why the search ends (or "" while it goes on)


def bracket(outcomes: list[Outcome]) -> tuple[float | None, float | None]:
    """(highest pass below the lowest failure above it, that failure); a target's last outcome counts."""
    last = {o.target: o.passed for o in outcomes}
    fails = sorted(t for t, ok in last.items() if not ok)
    passes = sorted(t for t, ok in last.items() if ok)
    if not passes:
        return None, (fails[0] if fails else None)
    # The lowest failure that has a pass below it bounds the redline; passes above it are noise.
    hi = next((f for f in fails if f > passes[0]), None)
    lo = max(p for p in passes if hi is None or p < hi)
    return lo, hi


def decide(spec: RedlineSpec, outcomes: list[Outcome], start: float, floor: float = MIN_TARGET) -> Decision:
    """The next target to try, or the end of the search with its result (no target below ``floor``)."""
    lo, hi = bracket(outcomes)
    tried = {round(o.target, 9) for o in outcomes}
    if len(outcomes) == 1 and not outcomes[0].passed and spec.max_steps > 1:
        return Decision(next_target=outcomes[0].target, passed=lo, failed=hi, converged=False, reason="")

    def end(reason: str, converged: bool = False) -> Decision:
        return Decision(next_target=None, passed=lo, failed=hi, converged=converged, reason=reason)

    def go(target: float) -> Decision:
        return Decision(next_target=target, passed=lo, failed=hi, converged=False, reason="")

    if not outcomes:
        return go(max(min(start, spec.max_target), floor))
    if lo is not None and hi is not None and (hi - lo) / lo <= spec.tolerance:
        return end(f"bracketed within {spec.tolerance * 100:g} %", converged=True)
    if len(outcomes) >= spec.max_steps:
        return end(f"step limit ({spec.max_steps}) reached before the bracket was within "
                   f"{spec.tolerance * 100:g} %")
    if lo is None:
        assert hi is not None
        nxt = hi / spec.factor
        if nxt < floor:
            return end(f"no target down to {max(floor, hi):,.4g} requests/s met the objective")
        return go(nxt)
    if hi is None:
        if lo >= spec.max_target:
            return end(f"the highest allowed target ({spec.max_target:g} requests/s) met the objective")
        return go(min(lo * spec.factor, spec.max_target))
    nxt = (lo + hi) / 2
    if round(nxt, 9) in tried:  # cannot happen with a real bracket; guards against looping forever
        return end("bracket cannot be narrowed further")
    return go(nxt)
