"""Live progress while a step runs: task, elapsed/remaining, docs/s (or ops/s) over the last
second, requests and errors so far. A rich live table on a terminal; a plain line every 10 s when
output is not a terminal (CI logs)."""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field

from rich.console import Console
from rich.live import Live
from rich.table import Table

from bench.driver.coordinator import StepListener
from bench.driver.samples import RequestSample
from bench.track.model import Task
from bench.util.numbers import plain


@dataclass
class _TaskProgress:
    task: Task
    started: float
    requests: int = 0
    errors: int = 0
    # Work per unit: a Loadgen task mixes bulks (docs) and searches (ops), which must not add up as docs.
    units: dict[str, int] = field(default_factory=dict)
    done: bool = False
    recent: deque[tuple[float, str, int]] = field(default_factory=deque)  # (arrival, unit, units)

    def add(self, now: float, unit: str, units: int) -> None:
        self.units[unit] = self.units.get(unit, 0) + units
        self.recent.append((now, unit, units))
        # Pruned here too, not only when the rate is shown: with the display off (--quiet) nothing reads it,
        # and a race of hours would keep every sample's arrival.
        self._prune(now)

    def _prune(self, now: float) -> None:
        while self.recent and self.recent[0][0] < now - 2.0:
            self.recent.popleft()

    def rate(self, now: float) -> str:
        """Work per second over the last 2 s, per unit ("1,200 docs/s, 30 ops/s")."""
        self._prune(now)
        per: dict[str, float] = {u: 0.0 for u in self.units}
        for _, unit, units in self.recent:
            per[unit] += units / 2.0
        return ", ".join(f"{v:,.0f} {u}/s" for u, v in per.items()) or "0 ops/s"

    def work(self) -> str:
        """Requests, and docs only where there was bulk work (a search's unit is the request itself)."""
        extra = "".join(f", {plain(n)} {u}" for u, n in self.units.items() if u != "ops")
        return f"{plain(self.requests)} requests{extra}"

    def planned(self) -> float | None:
        t = self.task
        if t.time_period is not None:
            return (t.warmup_time_period or 0) + t.time_period + (t.ramp_down_time_period or 0)
        return None


class Progress(StepListener):
    def __init__(self, console: Console | None = None, *, enabled: bool = True) -> None:
        self.console = console or Console(stderr=True)
        self.enabled = enabled
        self.live = self.enabled and self.console.is_terminal
        self._tasks: dict[str, _TaskProgress] = {}
        self._live: Live | None = None
        self._last_plain = 0.0

    def step_started(self, tasks: list[Task]) -> None:
        now = time.monotonic()
        self._tasks = {t.name: _TaskProgress(t, now) for t in tasks}
        if not self.enabled:
            return
        names = ", ".join(t.name for t in tasks)
        if self.live:
            self._live = Live(self._table(), console=self.console, refresh_per_second=2, transient=True)
            self._live.start()
        else:
            self.console.print(f"Running {names}")
            self._last_plain = now

    def samples(self, batch: list[RequestSample]) -> None:
        now = time.monotonic()
        for s in batch:
            tp = self._tasks.get(s.task)
            if tp is None:
                continue
            tp.requests += 1
            tp.errors += 0 if s.success else 1
            tp.add(now, s.unit, s.units)
        if not self.enabled:
            return
        if self._live is not None:
            self._live.update(self._table())
        elif now - self._last_plain >= 10:
            self._last_plain = now
            for name, tp in self._tasks.items():
                if not tp.done:
                    self.console.print(f"  {name}: {now - tp.started:.0f} s, {tp.rate(now)}, "
                                       f"{tp.work()}, {plain(tp.errors)} errors")

    def task_done(self, task: str) -> None:
        if task in self._tasks:
            self._tasks[task].done = True

    def step_ended(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None
        if not self.enabled:
            return
        now = time.monotonic()
        for name, tp in self._tasks.items():
            err = f", [red]{plain(tp.errors)} errors[/red]" if tp.errors else ""
            self.console.print(f"[green]done[/green] {name}: {tp.work()} in {now - tp.started:.1f} s{err}")

    def _table(self) -> Table:
        now = time.monotonic()
        t = Table(box=None, header_style="bold")
        for col in ("Task", "Elapsed", "Remaining", "Rate now", "Requests", "Errors"):
            t.add_column(col, justify="left" if col == "Task" else "right")
        for name, tp in self._tasks.items():
            el = now - tp.started
            planned = tp.planned()
            rem = "done" if tp.done else (f"{max(0.0, planned - el):.0f} s" if planned else "-")
            t.add_row(name, f"{el:.0f} s", rem, tp.rate(now), plain(tp.requests),
                      f"[red]{plain(tp.errors)}[/red]" if tp.errors else "0")
        return t
