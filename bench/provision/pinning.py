"""Which CPUs each cluster bench starts here and its load driver run on (pure).

Explicit sets (a topology's ``cpus:`` per cluster and ``driver_cpus:``), or ``auto``: on a machine where bench may
use at least ``AUTO_MIN_CPUS`` CPUs, the CPUs are divided into equal disjoint slots (by default one per cluster plus
one for the load driver; ``auto:N`` makes N); the clusters take the first slots in their order, the load driver the
last, and the division's rest stays for bench's own process (``own_cpus``) and the OS. A study gives every variant the
same number of slots (``pinning: auto:3`` in its ``race:`` options), so the baseline's one cluster runs on the CPUs
the CCR leader runs on, and the driver on the same CPUs in both. On a smaller machine nothing is pinned and the
plan's note says so in one line (printed, and stored with the trial so its report says which kind of run it was).
"""

from __future__ import annotations

import re

from pydantic import BaseModel

from bench.provision.cpus import AUTO_MIN_CPUS, cpu_list_text
from bench.util.errors import ConfigError

PINNING_PATTERN = r"^(off|auto(:[1-9][0-9]?)?)$"


class CpuPlan(BaseModel):
    clusters: dict[str, frozenset[int] | None]  # cluster name -> its nodes' CPU set (None: not pinned)
    driver: frozenset[int] | None = None  # the load driver's local workers
    note: str | None = None  # what pinning did or why it did not pin, one line

    @property
    def pinned(self) -> bool:
        return self.driver is not None or any(c is not None for c in self.clusters.values())


def auto_slots(pinning: str, clusters: int) -> int | None:
    """``auto`` -> clusters + 1, ``auto:N`` -> N, ``off`` -> None; ConfigError when N leaves no slot for the
    driver."""
    if not re.match(PINNING_PATTERN, pinning):
        raise ConfigError(f"pinning {pinning!r}: use off, auto or auto:N (N equal CPU slots: the clusters take the "
                          f"first, the load driver the last)")
    if pinning == "off":
        return None
    _, _, n = pinning.partition(":")
    slots = int(n) if n else clusters + 1
    if slots < clusters + 1:
        raise ConfigError(f"pinning {pinning}: {clusters} cluster(s) and the load driver need at least "
                          f"{clusters + 1} slots")
    return slots


def auto_plan(names: list[str], usable: frozenset[int], slots: int) -> CpuPlan:
    """Equal disjoint slots of ``usable`` in CPU order: the clusters take the first, the driver the last."""
    if len(usable) < max(AUTO_MIN_CPUS, slots):
        return CpuPlan(clusters=dict.fromkeys(names), note=(
            f"CPU pinning off: auto pinning needs at least {max(AUTO_MIN_CPUS, slots)} CPUs and bench may use "
            f"{len(usable)} here ({cpu_list_text(usable)})"))
    ordered = sorted(usable)
    size = len(ordered) // slots
    sets = [frozenset(ordered[i * size:(i + 1) * size]) for i in range(slots)]
    plan = CpuPlan(clusters=dict(zip(names, sets)), driver=sets[-1])
    return plan.model_copy(update={"note": "CPU pinning auto: " + plan_text(plan)})


def explicit_plan(clusters: dict[str, frozenset[int] | None], driver: frozenset[int] | None) -> CpuPlan:
    plan = CpuPlan(clusters=clusters, driver=driver)
    return plan.model_copy(update={"note": "CPU pinning: " + plan_text(plan)}) if plan.pinned else plan


def plan_text(plan: CpuPlan) -> str:
    parts = [f"{name} on CPU {cpu_list_text(s)}" if s is not None else f"{name} unpinned"
             for name, s in plan.clusters.items()]
    parts.append(f"load driver on CPU {cpu_list_text(plan.driver)}" if plan.driver is not None
                 else "load driver unpinned")
    return ", ".join(parts)


def own_cpus(usable: frozenset[int], driver: frozenset[int] | None,
             clusters: list[frozenset[int] | None]) -> frozenset[int] | None:
    """Where bench's own process runs while its workers are pinned: the usable CPUs no cluster and no worker is
    pinned to, so that it never takes a worker's core (a worker that waits for a core sends late); None (anywhere)
    when the driver is not pinned or no CPU is left over."""
    if driver is None:
        return None
    rest = usable - driver - frozenset().union(*(c for c in clusters if c is not None))
    return rest or None
