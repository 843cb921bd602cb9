"""An OpenSearch Benchmark workload's rendered ``workload.json`` read as the Rally track it was forked from.

OSB renamed Rally's challenges to test procedures (``test_procedures``, ``test_procedure``; the ``challenges``
spelling is read too) and added ``clients_list`` to a schedule entry: the task runs once per client count, one
after another, each a task of its own named ``<task>_<n>_clients`` (``<task>-<n>-clients`` for hyphenated names),
as OSB expands it. A ``target-throughput`` (or ``target-interval``) of 0 means unthrottled in OSB (it reads the
value only when truthy; workloads write ``{{ target_throughput | default(0) }}``), so it is dropped here. Everything else in workload.json is Rally's format and is read by bench's track loader as it is.
Pure functions of the parsed JSON.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from bench.util.errors import TrackError

_SPELLINGS = (("test_procedures", "challenges"), ("test_procedure", "challenge"), ("challenges", "challenges"),
              ("challenge", "challenge"), ("schedule", "schedule"))


def as_track(raw: dict[str, Any], file: Path) -> dict[str, Any]:
    """The workload as a Rally track dict: the test procedures as challenges, ``clients_list`` expanded."""
    present = [key for key, _ in _SPELLINGS if key in raw]
    if not present:
        raise TrackError(f"{file}: the workload has no 'test_procedures', 'test_procedure' or 'schedule'")
    if len(present) > 1:
        raise TrackError(f"{file}: the workload defines {' and '.join(repr(k) for k in present)}: keep only one "
                         f"(OSB allows one of 'test_procedures', 'test_procedure' or 'schedule')")
    key = present[0]
    rally_key = dict(_SPELLINGS)[key]
    out = {k: v for k, v in raw.items() if k != key}
    value = copy.deepcopy(raw[key])
    if rally_key == "challenges" and isinstance(value, list):
        value = [_expanded(p, file, f"{key}[{i}]") for i, p in enumerate(value)]
    elif rally_key == "challenge":
        value = _expanded(value, file, key)
    elif rally_key == "schedule":
        value = _schedule(value, file, "schedule")
    out[rally_key] = value
    return out


def _expanded(procedure: Any, file: Path, where: str) -> Any:
    if isinstance(procedure, dict) and isinstance(procedure.get("schedule"), list):
        procedure = {**procedure, "schedule": _schedule(procedure["schedule"], file, f"{where}.schedule")}
    return procedure


def _schedule(steps: Any, file: Path, where: str) -> Any:
    if not isinstance(steps, list):
        return steps
    out: list[Any] = []
    for i, step in enumerate(steps):
        if isinstance(step, dict) and "clients_list" in step:
            out.extend(clients_list_tasks(_unthrottled_zero(step), file, f"{where}[{i}]"))
        elif isinstance(step, dict) and isinstance(step.get("parallel"), dict):
            par = _unthrottled_zero(step["parallel"])
            if isinstance(par.get("tasks"), list):
                par["tasks"] = [_unthrottled_zero(t) if isinstance(t, dict) else t for t in par["tasks"]]
            out.append({**step, "parallel": par})
        else:
            out.append(_unthrottled_zero(step) if isinstance(step, dict) else step)
    return out


def _unthrottled_zero(spec: dict[str, Any]) -> dict[str, Any]:
    """Without a throughput or interval of 0 (OSB: no target, i.e. as fast as possible)."""
    return {k: v for k, v in spec.items()
            if not (k in ("target-throughput", "target-interval") and isinstance(v, (int, float))
                    and not isinstance(v, bool) and v == 0)}


def clients_list_tasks(step: dict[str, Any], file: Path, where: str) -> list[dict[str, Any]]:
    """One task per entry of ``clients_list``, with that many clients and a name saying so."""
    counts = step["clients_list"]
    if not isinstance(counts, list) or not counts or not all(isinstance(n, int) and n >= 1 for n in counts):
        raise TrackError(f"{file}: {where}.clients_list must be a non-empty list of client counts (integers >= 1), "
                         f"got {counts!r}")
    if "clients" in step:
        raise TrackError(f"{file}: {where} has both 'clients' and 'clients_list': keep one")
    op = step.get("operation")
    base = step.get("name") or (op if isinstance(op, str) else op.get("name") or op.get("operation-type")
                                if isinstance(op, dict) else None)
    if not isinstance(base, str):
        raise TrackError(f"{file}: {where} has 'clients_list' but no task name or operation")
    rest = {k: v for k, v in step.items() if k != "clients_list"}
    return [{**rest, "clients": n, "name": task_name_for_clients(base, n)} for n in counts]


def task_name_for_clients(name: str, clients: int) -> str:
    """OSB's name for one client count of a ``clients_list`` task."""
    if "-" in name and "_" not in name:
        return f"{name}-{clients}-clients"
    return f"{name}_{clients}_clients"
