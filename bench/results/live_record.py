"""What the live page showed, as data: one point per task per second, one point per extension row per reading.
Kept with the trial (``live.json`` in its folder) so ``bench show TRIAL --live-html PATH`` draws the page again."""

from __future__ import annotations

from pydantic import BaseModel


class TaskPoint(BaseModel):
    t: float  # seconds since the race's first frame
    rate: float | None  # work per second over the last 2 settled s, in the task's unit; None: none settled yet
    unit: str  # docs/s for bulk work, else requests/s
    latency_ms: dict[str, float] | None  # "p50" -> ms over the last 10 s; None: no answer in the window
    requests: int
    errors: int
    errors_per_s: float | None


class ExtraPoint(BaseModel):
    t: float
    values: dict[str, float | None]
    note: str = ""


class LiveRecord(BaseModel):
    title: str
    started: float  # epoch seconds of the first frame
    updated: float  # epoch seconds of the newest frame
    running: bool = True
    tasks: dict[str, list[TaskPoint]] = {}
    extras: dict[str, dict[str, list[ExtraPoint]]] = {}  # group -> key -> points
