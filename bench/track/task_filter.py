"""Rally's ``--include-tasks`` / ``--exclude-tasks``: which tasks of the challenge run.

A filter is a task name, ``type:OPERATION-TYPE`` or ``tag:TAG``. Included: a task runs when any filter matches it.
Excluded: a task matching any filter is removed. Inside a ``parallel`` block tasks are filtered one by one, and the
block stays while any of its tasks does (as in Rally). A filter that matches no task of the challenge is an error (a typo
would otherwise run a different benchmark than asked); so is a filter leaving no task. Pure functions.
"""

from __future__ import annotations

from typing import NamedTuple

from bench.track.model import Challenge, Parallel, Step, Task
from bench.util.errors import ConfigError


class TaskFilter(NamedTuple):
    kind: str  # "name", "type" or "tag"
    value: str

    def matches(self, task: Task) -> bool:
        if self.kind == "type":
            return task.operation.operation_type == self.value
        if self.kind == "tag":
            return self.value in task.tags
        return task.name == self.value

    def __str__(self) -> str:
        return self.value if self.kind == "name" else f"{self.kind}:{self.value}"


def parse_filters(specs: list[str], flag: str) -> list[TaskFilter]:
    """``name``, ``type:X``, ``tag:X`` as Rally reads them (split at ':'); anything else is one line."""
    out = []
    for spec in specs:
        parts = spec.split(":")
        if len(parts) == 1 and parts[0]:
            out.append(TaskFilter("name", parts[0]))
        elif len(parts) == 2 and parts[0] in ("type", "tag") and parts[1]:
            out.append(TaskFilter(parts[0], parts[1]))
        else:
            raise ConfigError(f"{flag}: cannot read '{spec}': use a task name, type:OPERATION-TYPE or tag:TAG")
    return out


def _keep(task: Task, filters: list[TaskFilter], exclude: bool) -> bool:
    hit = any(f.matches(task) for f in filters)
    return not hit if exclude else hit


def filter_challenge(challenge: Challenge, include: list[str], exclude: list[str]) -> Challenge:
    """The challenge with only the tasks the filters let through (the challenge itself when there are none)."""
    if not include and not exclude:
        return challenge
    flag = "--include-tasks" if include else "--exclude-tasks"
    filters = parse_filters(include or exclude, flag)
    tasks = challenge.tasks()
    unmatched = [str(f) for f in filters if not any(f.matches(t) for t in tasks)]
    if unmatched:
        names = ", ".join(t.name for t in tasks)
        raise ConfigError(f"{flag}: {', '.join(unmatched)} match(es) no task of challenge '{challenge.name}' "
                          f"(its tasks: {names})")
    schedule: list[Step] = []
    for step in challenge.schedule:
        if isinstance(step, Parallel):
            kept = [t for t in step.tasks if _keep(t, filters, bool(exclude))]
            if kept:
                kept_names = {t.name for t in kept} | {"any"}
                # A removed completing task completes nothing: the others run to their own end, as in Rally.
                completed_by = step.completed_by if step.completed_by in kept_names else None
                schedule.append(Parallel(tasks=kept, completed_by=completed_by))
        elif _keep(step, filters, bool(exclude)):
            schedule.append(step)
    if not schedule:
        raise ConfigError(f"{flag}: no task of challenge '{challenge.name}' is left to run")
    return challenge.model_copy(update={"schedule": schedule})
