"""Annotations, as Rally has them: a message pinned to a day (``--race-timestamp``, moved to midnight UTC as Rally
does, so it lines up with the nightly points), optionally to one track and one chart (Rally's ``--chart-type`` /
``--chart-name``), in one environment. Kept in the local store (``bench.trials.sqlite``) and, with a metrics store,
in ``<prefix>-annotations`` with Rally's fields (``bench.trials.metrics_store.annotations``)."""

from __future__ import annotations

import uuid
from datetime import UTC, date, datetime

from pydantic import BaseModel, Field

from bench.util.errors import ConfigError

TIMESTAMP_FORMAT = "%Y%m%dT%H%M%SZ"  # Rally's race timestamp
# Rally's --chart-type choices (esrally/rally.py).
CHART_TYPES: tuple[str, ...] = ("query", "script", "stats", "indexing", "gc", "index_times", "merge_times",
                                "merge_count", "refresh_times", "segment_count", "io", "ml_processing_time")


class Annotation(BaseModel):
    id: str = Field(default_factory=lambda: str(uuid.uuid4()))
    environment: str = "local"
    race_timestamp: str  # midnight of the day, Rally's format: 20261124T000000Z
    track: str | None = None  # None: every track
    chart: str | None = None  # a chart type of CHART_TYPES; None: every chart
    chart_name: str | None = None  # None: every chart
    message: str

    @property
    def day(self) -> date:
        return datetime.strptime(self.race_timestamp, TIMESTAMP_FORMAT).date()

    def to_document(self) -> dict[str, str | None]:
        """Rally's ``rally-annotations`` document."""
        return {"environment": self.environment, "race-timestamp": self.race_timestamp, "track": self.track,
                "chart": self.chart, "chart-name": self.chart_name, "message": self.message}

    @classmethod
    def from_document(cls, doc_id: str, doc: dict[str, object]) -> Annotation:
        def text(key: str) -> str | None:
            v = doc.get(key)
            return str(v) if v not in (None, "") else None

        return cls(id=doc_id, environment=text("environment") or "local",
                   race_timestamp=text("race-timestamp") or "", track=text("track"), chart=text("chart"),
                   chart_name=text("chart-name"), message=text("message") or "")


def at_midnight(race_timestamp: str) -> str:
    """Rally's race timestamp (or a day, yyyyMMdd) as midnight UTC of its day, in Rally's format."""
    raw = (race_timestamp or "").strip()
    for fmt in (TIMESTAMP_FORMAT, "%Y%m%d"):
        try:
            parsed = datetime.strptime(raw, fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
        return parsed.replace(hour=0, minute=0, second=0).strftime(TIMESTAMP_FORMAT)
    raise ConfigError(f"--race-timestamp {race_timestamp!r}: use a race timestamp such as 20261124T013000Z "
                      "(as 'bench list trials' and the history site show) or a day, 20261124")


def parse_day(value: str | None, flag: str) -> date | None:
    """``--from-date`` / ``--to-date``: yyyyMMdd, as Rally takes them."""
    if value is None:
        return None
    try:
        return datetime.strptime(value.strip(), "%Y%m%d").date()
    except ValueError:
        raise ConfigError(f"{flag} {value!r}: use yyyyMMdd, e.g. 20261124") from None


def select(annotations: list[Annotation], *, environment: str | None = None, track: str | None = None,
           from_date: date | None = None, to_date: date | None = None) -> list[Annotation]:
    """Rally's ``list annotations`` filter and order: newest day first, then track and chart."""
    out = [a for a in annotations
           if (environment is None or a.environment == environment)
           and (track is None or a.track == track)
           and (from_date is None or a.day >= from_date) and (to_date is None or a.day <= to_date)]
    return sorted(out, key=lambda a: (-a.day.toordinal(), a.track or "", a.chart or "", a.id))
