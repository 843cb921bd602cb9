"""Live progress while a step runs: per task its elapsed/remaining time, work per second (docs/s or ops/s),
latency percentiles over the last seconds (from the due time, as bench reports latency), requests and errors so
far, and the rows extensions add (``bench.driver.live_rows``: e.g. a follower's lag). A rich live table on a
terminal, redrawn every second; a plain line every 10 s when output is not a terminal (CI logs). Every second it
also hands a ``LiveFrame`` to its frame consumers (the race's live page)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.table import Table

from bench.driver.coordinator import START_DELAY, StepListener
from bench.driver.live_rows import LiveRow
from bench.driver.live_window import PERCENTILES, WINDOW, TaskView, TaskWindow
from bench.driver.samples import RequestSample
from bench.track.model import Task
from bench.util.numbers import plain

REFRESH = 1.0  # seconds between two redraws of the live view (and two frames of the live page)
PLAIN_EVERY = 10.0  # seconds between two plain progress lines off a terminal


@dataclass(frozen=True)
class LiveFrame:
    """What the live view showed at one instant: every task of the step, and the newest extension rows."""

    at: float  # epoch seconds
    tasks: list[TaskView]
    extras: list[LiveRow]


FrameConsumer = Callable[[LiveFrame], None]


@dataclass
class _TaskProgress:
    task: Task
    window: TaskWindow
    done: bool = False

    @property
    def started(self) -> float:
        return self.window.started

    def rate(self, now: float) -> str:
        """Work per second over the last 2 s, per unit ("1,200 docs/s, 30 ops/s")."""
        return rate_text(self.view(now))

    def planned(self) -> float | None:
        t = self.task
        if t.time_period is not None:
            return (t.warmup_time_period or 0) + t.time_period + (t.ramp_down_time_period or 0)
        return None

    def view(self, now: float) -> TaskView:
        return self.window.view(self.task.name, now, self.planned(), self.done)


def rate_text(v: TaskView) -> str:
    if v.requests_per_s is None:
        return "- ops/s"  # no settled second yet
    return ", ".join(f"{r:,.0f} {u}/s" for u, r in v.rates.items()) or "0 ops/s"


def work_text(v: TaskView) -> str:
    """Requests, and docs only where there was bulk work (a search's unit is the request itself)."""
    extra = "".join(f", {plain(n)} {u}" for u, n in v.units.items() if u != "ops")
    return f"{plain(v.requests)} requests{extra}"


def ms_text(v: float | None) -> str:
    if v is None:
        return "-"
    return f"{v:,.0f}" if v >= 100 else f"{v:.1f}" if v >= 10 else f"{v:.2f}"


def latency_text(v: TaskView) -> str:
    if v.latency_ms is None:
        return f"no answer in the last {WINDOW} s"
    return "latency " + " ".join(f"p{p:g} {ms_text(v.latency_ms[p])} ms" for p in PERCENTILES) + f" (last {WINDOW} s)"


def value_text(v: float | None) -> str:
    return "?" if v is None else f"{v:,.0f}" if abs(v) >= 100 else f"{v:,.2f}"


class Progress(StepListener):
    def __init__(self, console: Console | None = None, *, enabled: bool = True,
                 frames: list[FrameConsumer] | None = None) -> None:
        self.console = console or Console(stderr=True)
        self.enabled = enabled
        self.live = self.enabled and self.console.is_terminal
        self.frames = frames if frames is not None else []
        self._tasks: dict[str, _TaskProgress] = {}
        self._extras: dict[tuple[str, str], LiveRow] = {}
        self._live: Live | None = None
        self._last_plain = 0.0
        self._last_refresh = 0.0

    def extension_rows(self, rows: list[LiveRow]) -> None:
        """The newest rows extensions made of the telemetry just stored; shown from the next refresh on."""
        for r in rows:
            self._extras[(r.group, r.key)] = r

    def step_started(self, tasks: list[Task]) -> None:
        now = time.time()
        # told when the workers are sent Go: their clients start START_DELAY later
        self._tasks = {t.name: _TaskProgress(t, TaskWindow(now + START_DELAY)) for t in tasks}
        self._last_refresh = now
        if not self.enabled:
            return
        if self.live:
            self._live = Live(self._render(self._views(now)), console=self.console, auto_refresh=False,
                              transient=True)
            self._live.start(refresh=True)
        else:
            self.console.print(f"Running {', '.join(t.name for t in tasks)}")
            self._last_plain = now

    def samples(self, batch: list[RequestSample]) -> None:
        """A batch of samples (empty: only the clock moved, so the view is redrawn on time)."""
        now = time.time()
        if batch and (self.enabled or self.frames):  # with nothing to show, nothing is kept (--quiet)
            self._count(batch)
        if now - self._last_refresh >= REFRESH:
            self._last_refresh = now
            self._refresh(now)

    def _count(self, batch: list[RequestSample]) -> None:
        windows: dict[str, TaskWindow] = {}
        for s in batch:
            w = windows.get(s.task)
            if w is None:
                tp = self._tasks.get(s.task)
                if tp is None:
                    continue
                w = windows[s.task] = tp.window
            # completed at: due time plus latency (latency is measured from the due time)
            w.add(s.absolute_time + s.latency, s.latency, s.success, s.unit, s.units)

    def _views(self, now: float) -> list[TaskView]:
        return [tp.view(now) for tp in self._tasks.values()]

    def _refresh(self, now: float) -> None:
        if not self.frames and not self.enabled:
            return
        views = self._views(now)
        frame = LiveFrame(now, views, list(self._extras.values()))  # the instant the views are of
        for consume in self.frames:
            consume(frame)
        if not self.enabled:
            return
        if self._live is not None:
            self._live.update(self._render(views), refresh=True)
        elif now - self._last_plain >= PLAIN_EVERY:
            self._last_plain = now
            for v in views:
                if not v.done:
                    self.console.print(f"  {v.task}: {v.elapsed:.0f} s, {rate_text(v)}, {work_text(v)}, "
                                       f"{plain(v.errors)} errors, {latency_text(v)}", markup=False, highlight=False,
                                       soft_wrap=True)  # one line per task in a log, however wide
            for r in self._extras.values():
                values = ", ".join(f"{k} {value_text(x)}" for k, x in r.values.items())
                self.console.print(f"  {r.group} {r.key}: {values}{', ' + r.note if r.note else ''}",
                                   markup=False, highlight=False, soft_wrap=True)

    def task_done(self, task: str) -> None:
        if task in self._tasks:
            self._tasks[task].done = True

    def step_ended(self) -> None:
        now = time.time()
        self._refresh(now)  # the last frame: what the step ended with
        if self._live is not None:
            self._live.stop()
            self._live = None
        if not self.enabled:
            return
        for name, tp in self._tasks.items():
            v = tp.view(now)
            err = f", [red]{plain(v.errors)} errors[/red]" if v.errors else ""
            self.console.print(f"[green]done[/green] {name}: {work_text(v)} in {now - tp.started:.1f} s{err}")

    def _render(self, views: list[TaskView]) -> RenderableType:
        t = Table(box=None, header_style="bold")
        for col in ("Task", "Elapsed", "Remaining", "Rate now", *(f"p{p:g} ms" for p in PERCENTILES), "Requests",
                    "Errors"):
            t.add_column(col, justify="left" if col == "Task" else "right")
        for v in views:
            rem = "done" if v.done else (f"{max(0.0, v.planned - v.elapsed):.0f} s" if v.planned else "-")
            lat = [ms_text(v.latency_ms[p] if v.latency_ms else None) for p in PERCENTILES]
            per_s = f" ({v.errors_per_s:,.1f}/s)" if v.errors_per_s is not None else ""
            errors = f"[red]{plain(v.errors)}{per_s}[/red]" if v.errors else "0"
            t.add_row(v.task, f"{v.elapsed:.0f} s", rem, rate_text(v), *lat, plain(v.requests), errors)
        parts: list[RenderableType] = [t]
        groups: dict[str, list[LiveRow]] = {}
        for r in self._extras.values():
            groups.setdefault(r.group, []).append(r)
        for group, rows in groups.items():
            columns = list(dict.fromkeys(k for r in rows for k in r.values))
            g = Table(box=None, header_style="bold", title=group, title_justify="left")
            for col in ("", *columns, "Age", ""):
                g.add_column(col, justify="right" if col in columns or col == "Age" else "left")
            for r in rows:
                g.add_row(r.key, *(value_text(r.values.get(c)) for c in columns), f"{time.time() - r.at:.0f} s",
                          r.note)
            parts.append(g)
        return Group(*parts)
