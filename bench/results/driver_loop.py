"""When the load driver limited a race: the stored ``driver-loop`` telemetry rows of its workers
(``bench.driver.loop_load``) judged per worker and step -- the summary's ``driver-loop`` section, its rows and
the note for each saturated worker step. Pure functions of the rows."""

from __future__ import annotations

from typing import Any

import pandas as pd
from pydantic import BaseModel

from bench.driver.loop_load import DEVICE
from bench.results.sections import MetricRow
from bench.results.summary import BEHIND_SCHEDULE_MS, TaskSummary

SECTION = DEVICE  # the summary section's name
BUSY_CPU_SHARE = 0.8  # a loop thread using more than this share of a core left no room to send on time
LATE_MS = 50.0  # a loop whose median wake-up was later than this delayed half of what it timed by as much
# A loop whose wake-ups were later than this in more than 1 % of them stalled for as long (e.g. 2,000 clients
# connecting in one go, or answering all at once): what it timed then carries the stall.
STALL_P99_MS = 100.0
MIN_SECONDS = 0.5  # shorter steps are not judged: a handful of probes says nothing


class BusyLoop(BaseModel):
    """A worker's step whose loop was busy or late enough to have limited the load."""

    worker: str
    step: int
    tasks: list[str]
    clients: int
    cpu_share: float
    lag_p50_ms: float
    lag_p99_ms: float


class DriverLoopSection(BaseModel):
    busy: list[BusyLoop] = []
    # Over every judged step of every worker: the highest loop-thread CPU share and median lag seen.
    max_cpu_share: float | None = None
    max_lag_p50_ms: float | None = None
    max_lag_p99_ms: float | None = None


def _steps(telemetry: pd.DataFrame) -> list[tuple[str, int, list[str], dict[str, float]]]:
    """(worker, step, tasks, metric -> value) per worker step, in step order."""
    d = telemetry[telemetry["device"] == DEVICE]
    steps: dict[tuple[str, int], tuple[list[str], dict[str, float]]] = {}
    for node, metric, value, raw in zip(d["node"], d["metric"], d["value"], d["raw"]):
        raw = raw if isinstance(raw, dict) else {}
        tasks, values = steps.setdefault((str(node), int(raw.get("step", -1))),
                                         ([str(t) for t in raw.get("tasks", [])], {}))
        values[str(metric)] = float(value)
    return [(w, s, t, v) for (w, s), (t, v) in sorted(steps.items(), key=lambda kv: (kv[0][1], kv[0][0]))]


def driver_loop_section(telemetry: pd.DataFrame) -> DriverLoopSection | None:
    """Pure: the section from a trial's telemetry rows; None when no worker stored any (older trials)."""
    if telemetry.empty or telemetry[telemetry["device"] == DEVICE].empty:
        return None
    section = DriverLoopSection()
    judged = [s for s in _steps(telemetry) if s[3].get("seconds", 0.0) >= MIN_SECONDS]
    if judged:
        section.max_cpu_share = max(v.get("cpu_share", 0.0) for *_, v in judged)
        section.max_lag_p50_ms = max(v.get("lag_p50_ms", 0.0) for *_, v in judged)
        section.max_lag_p99_ms = max(v.get("lag_p99_ms", 0.0) for *_, v in judged)
    for worker, step, tasks, v in judged:
        if (v.get("cpu_share", 0.0) > BUSY_CPU_SHARE or v.get("lag_p50_ms", 0.0) > LATE_MS
                or v.get("lag_p99_ms", 0.0) > STALL_P99_MS):
            section.busy.append(BusyLoop(worker=worker, step=step, tasks=tasks, clients=int(v.get("clients", 0)),
                                         cpu_share=v.get("cpu_share", 0.0), lag_p50_ms=v.get("lag_p50_ms", 0.0),
                                         lag_p99_ms=v.get("lag_p99_ms", 0.0)))
    return section


def _ms(v: float) -> str:
    return f"{v:,.0f}" if v >= 10 else f"{v:.1f}"


def busy_notes(section: DriverLoopSection) -> list[str]:
    """One note per busy worker step: what the driver did, and what to do. A loop that was late while using
    little CPU waited for the CPU itself: the machine, not the loop, was short of it."""
    out = []
    for b in section.busy:
        tasks = ", ".join(repr(t) for t in b.tasks)
        late = f"{_ms(b.lag_p50_ms)} ms late at the median, {_ms(b.lag_p99_ms)} ms at p99"
        if b.cpu_share > BUSY_CPU_SHARE:
            head = (f"Load driver saturated: {b.worker} ran {b.clients} client(s) of {tasks} with its event loop "
                    f"using {b.cpu_share * 100:.0f} % of a core and running {late}")
            todo = "use more --worker-processes or fewer clients per worker"
        else:
            head = (f"Load driver late: {b.worker} ran {b.clients} client(s) of {tasks} and its event loop ran {late} "
                    f"while using only {b.cpu_share * 100:.0f} % of a core: this machine was short of CPU for it "
                    "(other processes, a cluster on the same machine)")
            todo = "give the driver cores of its own, or fewer clients per worker"
        out.append(f"{head}: latency and throughput of that step are partly the load driver's, not the "
                   f"cluster's; {todo}.")
    return out


def schedule_notes(section: DriverLoopSection, tasks: list[TaskSummary]) -> list[str]:
    """Whose wait it was, for each task that fell behind its schedule: the load driver's when its loop ran late
    by at least half as much at p99 (a request due while the loop was stalled waits for the loop), else the
    cluster's (a client's next request waits for the previous answer)."""
    out = []
    loop_p99 = section.max_lag_p99_ms
    for t in tasks:
        lag = t.schedule_lag.get(99.0, 0.0)
        if lag <= BEHIND_SCHEDULE_MS or loop_p99 is None:
            continue
        if loop_p99 >= lag / 2:
            out.append(f"Load driver behind schedule: task '{t.task}' sent requests {lag:,.1f} ms late at p99 and "
                       f"the driver's event loop ran {_ms(loop_p99)} ms late at p99 (busiest worker "
                       f"{(section.max_cpu_share or 0.0) * 100:.0f} % of a core): that wait is the load driver's, "
                       "not the cluster's; use more --worker-processes, fewer clients per worker, or give the "
                       "driver cores of its own.")
        else:
            out.append(f"Task '{t.task}' fell behind its schedule because of the answers, not the load driver (its "
                       f"event loop ran {_ms(loop_p99)} ms late at p99; service time p99 "
                       f"{t.service_time.get(99.0, 0.0):,.1f} ms): a client's next request waits for its previous "
                       "answer.")
    return out


def section_rows(data: dict[str, Any]) -> list[MetricRow]:
    """Report rows: the busiest loop seen, and each busy worker step."""
    if not data:
        return []
    s = DriverLoopSection.model_validate(data)
    out = []
    if s.max_cpu_share is not None:
        out.append(MetricRow(metric="Driver loop CPU (busiest worker)", task="", value=s.max_cpu_share * 100,
                             unit="%"))
    if s.max_lag_p50_ms is not None:
        out.append(MetricRow(metric="Driver loop lag median (latest worker)", task="", value=s.max_lag_p50_ms,
                             unit="ms"))
    if s.max_lag_p99_ms is not None:
        out.append(MetricRow(metric="Driver loop lag p99 (latest worker)", task="", value=s.max_lag_p99_ms,
                             unit="ms"))
    for b in s.busy:
        scope = f"{b.worker}: {', '.join(b.tasks)}"
        out.append(MetricRow(metric="Driver saturated: loop CPU", task=scope, value=b.cpu_share * 100, unit="%"))
        out.append(MetricRow(metric="Driver saturated: loop lag p99", task=scope, value=b.lag_p99_ms, unit="ms"))
    return out
