"""What an experiment's variants differ in by design: stated once as the study's design, and the comparison
aspects (``bench.compare.mismatch``) that therefore warn only when the trials of one variant differ (pure).

A study of baseline against CCR runs other challenges, topologies and cars on purpose; warning about that tells the
reader nothing they did not plan, and buries what they did not.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bench.race.experiment import ExperimentFile

# Experiment keys (bench race's option names) -> the comparison aspects their values decide.
_ENGINE = frozenset({"engine versions", "distributions", "JDKs"})
DECIDES: dict[str, frozenset[str]] = {
    "track": frozenset({"tracks"}), "track_path": frozenset({"tracks"}), "challenge": frozenset({"tracks"}),
    "track_params": frozenset({"track params"}),
    "car": frozenset({"cars", "heaps"}), "car_params": frozenset({"cars", "heaps"}),
    # A topology names each cluster's engine, version, car and CPU set, and a CCR topology its leader.
    "topology": frozenset({"cars", "heaps", "CPU pinning", "roles"}) | _ENGINE,
    "distribution": _ENGINE, "distribution_version": _ENGINE, "distribution_repository": _ENGINE,
    "distribution_path": _ENGINE, "runtime_jdk": frozenset({"JDKs"}),
}


def _text(v: Any) -> str:
    if v is None:
        return "none"
    if isinstance(v, list):
        return "+".join(str(x) for x in v) if all(isinstance(x, str) for x in v) else json.dumps(v)
    return v if isinstance(v, str) else json.dumps(v, sort_keys=True)


def _values(exp: ExperimentFile) -> dict[str, dict[str, str]]:
    """key -> variant -> its value's text, for the keys whose value is not the same in every variant."""
    base = {str(k).replace("-", "_"): v for k, v in exp.race.items()}
    variants = {name: {**base, **{str(k).replace("-", "_"): v for k, v in opts.items()}}
                for name, opts in exp.variants.items()}
    for opts in variants.values():  # a topology names its clusters' cars (the environment table says which)
        if opts.get("topology"):
            opts.setdefault("car", "its topology's")
    keys = list(dict.fromkeys(k for opts in variants.values() for k in opts))
    keys.sort(key=lambda k: list(DECIDES).index(k) if k in DECIDES else len(DECIDES))  # what decides most first
    out: dict[str, dict[str, str]] = {}
    for key in keys:
        per = {name: _text(opts.get(key)) for name, opts in variants.items()}
        if len(set(per.values())) > 1:
            out[key] = per
    return out


def planned_aspects(exp: ExperimentFile) -> frozenset[str]:
    """The comparison aspects the variants differ in on purpose (``roles`` too when the study matches clusters)."""
    out: set[str] = set()
    for key in _values(exp):
        out |= DECIDES.get(key, frozenset())
    if exp.study is not None and exp.study.clusters:
        out.add("roles")
    return frozenset(out)


def design_line(exp: ExperimentFile) -> str | None:
    """``Design: the variants differ in challenge (a: baseline; b, c: ccr), topology (...).``; None when they do
    not differ in anything (one variant)."""
    parts = []
    for key, per in _values(exp).items():
        groups: dict[str, list[str]] = {}
        for name, value in per.items():
            groups.setdefault(value, []).append(name)
        parts.append(f"{key.replace('_', '-')} (" + "; ".join(f"{', '.join(names)}: {value}"
                                                            for value, names in groups.items()) + ")")
    if not parts:
        return None
    return "Design: the variants differ in " + ", ".join(parts) + "."
