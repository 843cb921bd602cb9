"""``ccr-lag:p99:5s``: a redline step objective -- the follower's time lag behind its leader, at that percentile of
the step's measured period, at most the budget, and the follower caught up within the step's cool-down.

From the redline's first step to its last, both clusters' own checkpoints are read every ``INTERVAL`` s (the
leader's and the follower's ``<index>/_stats?level=shards``, read together, and the follower's replication
status); the time lag is how long ago the leader passed the follower's checkpoint (``CheckpointHistory``), the
slowest shard's, the slowest follower's. A reading that fails, a follower that reports no checkpoints (paused,
stopped, failed) or fewer readings than seconds make the lag unknown, and an unknown lag fails the step with
that reason. The followers are the race's follower indices whose leader is an index the redline task writes
to, found before the first step (after the challenge's follow tasks ran).
"""

from __future__ import annotations

import asyncio
import math
import re
import time
from dataclasses import dataclass, field

import numpy as np

from bench.api import ConfigError, CurvePoint, ObjectiveResult, StepContext, StepObjective, StepWindow
from bench.ccr.engine import CcrEngine, FollowerProgress, NoStats, ccr_engine, detect_engine
from bench.http.client import DEFAULT_CLUSTER, ClusterTarget, RawHttp
from bench.telemetry.ccr_models import CheckpointHistory, checkpoint_lag
from bench.util.errors import BenchError

KEY = "ccr-lag"
EXAMPLE = "ccr-lag:p99:5s"
INTERVAL = 0.5  # s between readings: at least one a second even when a reading takes a while
COOLDOWN_INTERVAL = 0.1  # s between readings in a cool-down: catching up is timed to this
MIN_COOLDOWN = 1.0  # s: the default cool-down is the budget, but never below this (the driver's own end takes some)
_SPEC = re.compile(r"^p([0-9]+(?:\.[0-9]+)?):([0-9]*\.?[0-9]+)(ms|s|m)?$")


@dataclass(frozen=True)
class Follower:
    cluster: str
    index: str
    leader_index: str


@dataclass
class Reading:
    t: float  # epoch seconds (the clock of the requests' due times)
    lag_s: float | None  # the slowest follower's time lag; None: unknown (``why``)
    why: str = ""
    leader: dict[tuple[str, int], int] = field(default_factory=dict)  # (follower index, shard) -> leader checkpoint
    follower: dict[tuple[str, int], int] = field(default_factory=dict)
    paused: bool = False

    def caught_up(self, target: dict[tuple[str, int], int]) -> bool | None:
        """Has the follower reached ``target`` (None: this reading cannot tell)."""
        if self.lag_s is None:
            return None
        return all(self.follower.get(k, -1) >= v for k, v in target.items())


def parse_lag_objective(value: str) -> LagObjective:
    m = _SPEC.match(value.replace(" ", "").lower())
    if not m:
        raise ConfigError(f"'{value}' is not pNN:DURATION (the lag percentile and its budget)")
    pct, amount = float(m.group(1)), float(m.group(2)) * {"ms": 0.001, "s": 1.0, "m": 60.0}[m.group(3) or "s"]
    if not 0 < pct <= 100 or amount <= 0:
        raise ConfigError(f"'{value}': the percentile must be in (0, 100] and the budget above 0")
    return LagObjective(pct, amount)


class LagObjective(StepObjective):
    key = KEY

    def __init__(self, percentile: float, budget_s: float) -> None:
        self.percentile = percentile
        self.budget_s = budget_s
        self.followers: list[Follower] = []
        self._https: dict[str, RawHttp] = {}
        self._engines: dict[str, CcrEngine] = {}
        self._leader = ""
        self._histories: dict[tuple[str, int], CheckpointHistory] = {}
        self._readings: list[Reading] = []
        self._sampler: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()  # one reading at a time: the histories need them in time order
        self._t0 = 0.0

    @property
    def objective(self) -> str:
        return (f"follower time lag p{self.percentile:g} ≤ {self.budget_s:g} s and caught up within the "
                f"cool-down")

    @property
    def cooldown_s(self) -> float:
        # Within budget at the load's end, a follower that keeps up needs about that to catch up.
        return max(self.budget_s, MIN_COOLDOWN)

    async def prepare(self, ctx: StepContext) -> None:
        by_name = {t.name: t for t in ctx.targets}
        self._leader = str(ctx.task.operation.params.get("cluster") or
                           (DEFAULT_CLUSTER if DEFAULT_CLUSTER in by_name else ctx.targets[0].name))
        wanted = leader_indices(ctx)
        for name, target in by_name.items():
            self._https[name] = await _open(target)
        for name in by_name:
            if name == self._leader:
                continue
            engine = ccr_engine(await detect_engine(self._https[name]), self._https[name], name, timeout=2.0)
            self._engines[name] = engine
            self.followers += await _followers_of(engine, wanted)
        if not self.followers:
            raise ConfigError(f"--redline {KEY}: no follower index of leader index(es) {', '.join(wanted) or '?'} "
                              f"(cluster {self._leader}) on clusters {', '.join(self._engines) or 'none'}: follow "
                              "the leader before the redline task (a ccr-follow task), or drop ccr-lag")
        self._sampler = asyncio.create_task(self._sample_forever())

    async def settle(self, timeout_s: float) -> str | None:
        start = time.time()
        first = await self._next_reading(start)
        target = dict(first.leader) if first is not None else {}
        while time.time() - start < timeout_s:
            r = await self._next_reading(time.time())
            if r is None:
                return "the follower's lag is no longer read"
            if r.paused:
                return r.why
            if target and r.caught_up(target):
                return None
        return f"the followers did not catch up within {timeout_s:g} s after the previous step"

    async def start(self, step: int) -> None:
        self._t0 = time.time()

    async def finish(self, cooldown_s: float, window: StepWindow | None) -> ObjectiveResult:
        """Read at once, then every ``COOLDOWN_INTERVAL`` s until the follower has what the leader had when the
        load ended, or the cool-down is over."""
        w = window or StepWindow(self._t0, self._t0, time.time())
        # The readings taken since the last answer (while the driver wound the step up) count too.
        after = [x for x in self._readings if x.t >= w.ended] or [await self._read_now()]
        target = dict(after[0].leader) if after[0].lag_s is not None else None
        caught: float | None = None
        r = after[0]
        while target is not None:
            if r.caught_up(target) and r.t - w.ended <= cooldown_s:
                caught = max(0.0, r.t - w.ended)
                break
            if r.t - w.ended >= cooldown_s:
                break
            after = after[1:]
            if not after:
                await asyncio.sleep(COOLDOWN_INTERVAL)
            r = after[0] if after else await self._read_now()
        behind = sum(max(0, v - r.follower.get(k, -1)) for k, v in (target or {}).items())
        return self.verdict([x for x in self._readings if w.started <= x.t <= r.t], w, cooldown_s, caught,
                            None if target is None else behind)

    def verdict(self, readings: list[Reading], w: StepWindow, cooldown_s: float, caught: float | None,
                behind: int | None) -> ObjectiveResult:
        """``behind``: operations the follower still lacked at the last reading (None: unknown)."""
        measured = [r for r in readings if w.measured_from <= r.t <= w.ended]
        known = [r.lag_s for r in measured if r.lag_s is not None]
        unknown = [r for r in measured if r.lag_s is None]
        seconds = max(0.0, w.ended - w.measured_from)
        p = float(np.percentile(known, self.percentile)) if known and not unknown else None
        figures: dict[str, float | None] = {f"lag p{self.percentile:g} s": p, "lag max s": max(known, default=None),
                                            "catch-up s": caught, "readings": float(len(measured))}
        if caught is None and behind is not None:
            figures["ops behind after cool-down"] = float(behind)
        checks = [
            (not unknown, "lag unknown", f"lag unknown in {len(unknown)} of {len(measured)} readings: "
                                         f"{unknown[0].why if unknown else ''}"),
            (len(measured) >= math.floor(seconds), "lag unknown",
             f"lag unknown: {len(measured)} readings in {seconds:.1f} s measured (needs one a second)"),
            (p is not None and p <= self.budget_s, "lag",
             f"follower time lag p{self.percentile:g} {p or 0:.2f} s > {self.budget_s:g} s"),
            (behind is not None, "lag unknown", "catch-up unknown: the checkpoints at the load's end were not read"),
            (caught is not None, "catch-up", f"the follower did not catch up within the {cooldown_s:g} s cool-down "
                                             f"({behind} operations behind at its end)"),
        ]
        miss, why = next(((w, m) for ok, w, m in checks if not ok), ("", "met"))
        curve = [CurvePoint(t=r.t - w.started, value=r.lag_s, phase="warmup" if r.t < w.measured_from else
                            "measured" if r.t <= w.ended else "cooldown") for r in readings]
        return ObjectiveResult(key=KEY, objective=self.objective, met=not miss, why=why, miss=miss, figures=figures,
                               curve_label="follower time lag (s)", curve=curve)

    async def close(self) -> None:
        if self._sampler is not None:
            self._sampler.cancel()
            await asyncio.gather(self._sampler, return_exceptions=True)
        for http in self._https.values():
            await http.__aexit__(None, None, None)
        self._https.clear()

    async def _next_reading(self, after: float) -> Reading | None:
        """The first reading taken after ``after`` (None once the sampler has stopped)."""
        while self._sampler is not None and not self._sampler.done():
            fresh = [r for r in self._readings[-4:] if r.t >= after]
            if fresh:
                return fresh[0]
            await asyncio.sleep(INTERVAL / 5)
        return None

    async def _sample_forever(self) -> None:
        while True:
            began = time.monotonic()
            await self._read_now()
            await asyncio.sleep(max(0.0, INTERVAL - (time.monotonic() - began)))

    async def _read_now(self) -> Reading:
        async with self._lock:
            r = await self.read()
            self._readings.append(r)
            return r

    async def read(self) -> Reading:
        """One reading of every follower against its leader."""
        now = time.time()
        out = Reading(t=now, lag_s=0.0)
        for f in self.followers:
            try:
                progress, leader, follower = await asyncio.gather(
                    self._engines[f.cluster].progress(f.index),
                    self._stats(self._leader, f.leader_index), self._stats(f.cluster, f.index))
            except (BenchError, OSError, asyncio.TimeoutError) as e:
                return Reading(t=now, lag_s=None, why=f"reading follower {f.cluster}/{f.index} failed: {e}")
            bad = _no_progress(f, progress)
            if bad is not None:
                return Reading(t=now, lag_s=None, why=bad[0], paused=bad[1])
            try:
                lag = checkpoint_lag(leader, f.leader_index, follower, f.index)
            except BenchError as e:
                return Reading(t=now, lag_s=None, why=str(e))
            for shard, cp in lag.leader.items():
                h = self._histories.setdefault((f.index, shard), CheckpointHistory())
                h.add(now, cp)
                tl = h.time_lag(lag.follower.get(shard, -1), now)
                if tl is None or tl.lower_bound:
                    return Reading(t=now, lag_s=None, why=f"follower {f.index} shard {shard} is behind the oldest "
                                   "leader checkpoint read (its lag is only a lower bound)")
                out.lag_s = max(out.lag_s or 0.0, tl.seconds)
                out.leader[(f.index, shard)] = cp
                out.follower[(f.index, shard)] = lag.follower.get(shard, -1)
        return out

    async def _stats(self, cluster: str, index: str) -> object:
        status, body = await self._https[cluster].request("GET", f"/{index}/_stats", params={"level": "shards"},
                                                          timeout=2.0)
        if status >= 400:
            raise BenchError(f"GET {index}/_stats?level=shards on {cluster} answered HTTP {status}")
        return body


def _no_progress(f: Follower, p: FollowerProgress | NoStats) -> tuple[str, bool] | None:
    """Why a follower's answer says it is not replicating (and whether it was paused by a user), or None."""
    if isinstance(p, NoStats):
        return f"follower {f.cluster}/{f.index} reports no checkpoints: {p.reason}", p.paused
    if p.fatal:
        return f"follower {f.cluster}/{f.index} failed: {p.fatal}", False
    return None


async def _open(target: ClusterTarget) -> RawHttp:
    http = RawHttp(target, connections=3)
    await http.__aenter__()
    return http


def leader_indices(ctx: StepContext) -> list[str]:
    """The indices the redline task writes to: its ``index``, else its corpora's target indices, else the track's."""
    params = ctx.task.operation.params
    if params.get("index"):
        return [str(params["index"])]
    names = params.get("corpora")
    chosen = [names] if isinstance(names, str) else list(names or [])
    out = [d.target_index for c in ctx.track.corpora if not chosen or c.name in chosen for d in c.documents
           if d.target_index]
    return list(dict.fromkeys(out or [i.name for i in ctx.track.indices]))


async def _followers_of(engine: CcrEngine, leader_indices: list[str]) -> list[Follower]:
    """The follower indices on ``engine``'s cluster whose leader index is one of ``leader_indices``."""
    out = []
    for index in await engine.follower_indices():
        p = await engine.progress(index)
        leader = p.leader_index if isinstance(p, FollowerProgress) else index  # paused: named like its leader
        if leader in leader_indices:
            out.append(Follower(engine.cluster, index, str(leader)))
    return out
