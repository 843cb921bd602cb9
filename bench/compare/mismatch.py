"""What differs between the compared trials besides what the comparison is about: test mode, track parameters,
engine versions, cars, load-driver machines and bench versions, each one line naming every side's value(s).

A comparison's numbers mean something only when everything else is the same; an experiment's variants differ on
purpose (a car, a track parameter), and saying so up front costs one line, whereas a test-mode trial compared
with a full one silently turns a 20 % difference into noise about corpus size.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from bench.compare.model import Side
from bench.track.source import describe_source
from bench.trials.model import TrialInfo

UNSET = "unset"


def _engines(info: TrialInfo) -> str | None:
    found = sorted({f"{c.get('engine', '?')} {c.get('version', '?')}" for c in info.clusters})
    return ", ".join(found) or None  # no cluster facts stored (a failed race): unknown, not different


def _machine(info: TrialInfo) -> str | None:
    m = info.machine
    if not m:
        return None
    memory = m.get("memory_bytes")
    size = f", {memory / 2**30:.0f} GiB" if isinstance(memory, (int, float)) else ""
    return f"{m.get('hostname', '?')} ({m.get('cpu_count', '?')} CPUs{size}, {m.get('cpu_model') or '?'})"


def _per_cluster(info: TrialInfo, value: Callable[[dict[str, Any]], str | None]) -> str | None:
    """One value when every cluster has the same, else ``name: value`` per cluster; None when none is known."""
    found = {str(c.get("name", "?")): value(c) for c in info.clusters}
    known = {n: v for n, v in found.items() if v is not None}
    if not known:
        return None
    if len(set(known.values())) == 1 and len(known) == len(found):
        return next(iter(known.values()))
    return ", ".join(f"{n}: {v or 'unknown'}" for n, v in sorted(found.items()))


def _cars(info: TrialInfo) -> str | None:
    return _per_cluster(info, lambda c: c.get("car")) or "+".join(info.car) or "none (existing cluster)"


def _distribution(c: dict[str, Any]) -> str | None:
    d = c.get("distribution")
    if not isinstance(d, dict):
        return None
    return f"{d.get('repository', '?')} ({d.get('flavour', '?')}, {len(d.get('modules') or [])} modules)"


def _jdk(c: dict[str, Any]) -> str | None:
    j = c.get("java")
    return f"{j.get('source', '?')} JDK {j.get('version') or '?'}" if isinstance(j, dict) else None


def _heap(c: dict[str, Any]) -> str | None:
    """The heap the cluster's JVMs reported (``check_cluster``): one size, or per node."""
    h = c.get("heap_max_bytes")
    if isinstance(h, int):
        return f"{h / 2**20:,.0f} MiB"
    if isinstance(h, dict) and h:
        return ", ".join(f"{n} {v / 2**20:,.0f} MiB" for n, v in sorted(h.items()))
    return None


def _pinning(info: TrialInfo) -> str | None:
    """Which CPUs each cluster's nodes and the load driver were pinned to; None for trials stored before bench
    recorded it (unknown, not different)."""
    if not any("host" in c for c in info.clusters) and "machine_id" not in info.machine:
        return None
    parts = []
    for c in info.clusters:
        sets = c.get("cpus")
        if isinstance(sets, dict) and sets:
            values = set(sets.values())
            parts.append(f"{c.get('name', '?')} CPU {next(iter(values))}" if len(values) == 1 else
                         f"{c.get('name', '?')} " + ", ".join(f"{n} CPU {v}" for n, v in sorted(sets.items())))
    if info.machine.get("cpus"):
        parts.append(f"load driver CPU {info.machine['cpus']}")
    return ", ".join(parts) or "none"


def _corpora(info: TrialInfo) -> str:
    seeds = sorted({f.get("seed") for f in info.corpora if f.get("origin") == "synthetic"}, key=str)
    return f"synthetic (seed {', '.join(map(str, seeds))})" if seeds else "the track's own"


# (aspect name, its value in one trial): one warning line per aspect in which the compared trials differ
ASPECTS: list[tuple[str, Callable[[TrialInfo], str | None]]] = [
    ("test mode", lambda i: "test mode" if i.test_mode else "full"),
    ("track sources", lambda i: describe_source(i.track_source)),
    ("corpora", _corpora),
    ("engine versions", _engines),
    ("distributions", lambda i: _per_cluster(i, _distribution)),
    ("JDKs", lambda i: _per_cluster(i, _jdk)),
    ("cars", _cars),
    ("heaps", lambda i: _per_cluster(i, _heap)),
    ("CPU pinning", _pinning),
    ("load-driver machines", _machine),
    ("bench versions", lambda i: i.bench_version),
]


def _side_text(side: Side, value: Callable[[TrialInfo], str | None]) -> str:
    by_value: dict[str, list[str]] = {}
    for t in side.trials:
        v = value(t.info)
        by_value.setdefault(v if v is not None else "unknown", []).append(t.info.id[:8])
    if len(by_value) == 1:
        return next(iter(by_value))
    return ", ".join(f"{v} ({' '.join(ids)})" for v, ids in by_value.items())


def _differs(sides: list[Side], value: Callable[[TrialInfo], str | None]) -> bool:
    known = {value(t.info) for s in sides for t in s.trials} - {None}
    return len(known) > 1


def _param_text(v: Any) -> str:
    return v if isinstance(v, str) else json.dumps(v, sort_keys=True)


def _params_warning(sides: list[Side]) -> str | None:
    infos = [t.info for s in sides for t in s.trials]
    keys = sorted({k for i in infos for k in i.track_params})
    differing = [k for k in keys if len({_param_text(i.track_params.get(k, UNSET)) for i in infos}) > 1]
    if not differing:
        return None

    def value(info: TrialInfo) -> str:
        return ", ".join(f"{k}={_param_text(info.track_params[k]) if k in info.track_params else UNSET}"
                         for k in differing)

    return "Trials differ in track params: " + "; ".join(f"{s.label}: {_side_text(s, value)}" for s in sides) + "."


def _aspect_warning(sides: list[Side], name: str, value: Callable[[TrialInfo], str | None],
                    planned: frozenset[str] = frozenset()) -> str | None:
    if not _differs(sides, value):
        return None
    if name in planned and not any(_differs([s], value) for s in sides):
        return None  # the sides differ as the comparison's design says, and each side is uniform
    return f"Trials differ in {name}: " + "; ".join(f"{s.label}: {_side_text(s, value)}" for s in sides) + "."


def mismatch_warnings(sides: list[Side], planned: frozenset[str] = frozenset()) -> list[str]:
    """One warning per aspect in which the trials of ``sides`` (within a side too) differ: test mode, track
    source, track params, corpora (synthetic or not), then the environment. An aspect named in ``planned`` (one the sides differ in by design,
    e.g. an experiment's variants) warns only when the trials of one side differ in it."""
    params = _params_warning(sides)
    if params is not None and "track params" in planned and not any(_params_warning([s]) for s in sides):
        params = None
    found = [_aspect_warning(sides, *ASPECTS[0], planned), _aspect_warning(sides, *ASPECTS[1], planned), params,
             *(_aspect_warning(sides, name, value, planned) for name, value in ASPECTS[2:])]
    return [w for w in found if w is not None]
