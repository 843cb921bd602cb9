"""``bench list races`` / ``list trials`` filters, as Rally's ``list races`` has them: ``--track``, ``--challenge``,
``--from-date``/``--to-date`` (``yyyyMMdd``, both inclusive, UTC), ``--user-tags`` (every ``k:v`` must match),
``--benchmark-name`` (the ``name`` or ``benchmark-name`` user tag), and ``--format json``. Pure functions.
"""

from __future__ import annotations

import argparse
import json
from datetime import date, datetime, timezone
from typing import Any

from pydantic import BaseModel, Field

from bench.trials.model import TrialInfo
from bench.util.errors import ConfigError


class RaceFilter(BaseModel):
    track: str | None = None
    challenge: str | None = None
    from_date: date | None = None
    to_date: date | None = None
    user_tags: dict[str, str] = Field(default_factory=dict)
    benchmark_name: str | None = None

    def active(self) -> bool:
        return any(v not in (None, {}) for v in self.model_dump().values())

    def matches(self, t: TrialInfo) -> bool:
        day = (t.start_time if t.start_time.tzinfo else t.start_time.replace(tzinfo=timezone.utc)) \
            .astimezone(timezone.utc).date()
        return ((self.track is None or t.track == self.track)
                and (self.challenge is None or t.challenge == self.challenge)
                and (self.from_date is None or day >= self.from_date)
                and (self.to_date is None or day <= self.to_date)
                and all(t.user_tags.get(k) == v for k, v in self.user_tags.items())
                and (self.benchmark_name is None
                     or self.benchmark_name in (t.user_tags.get("name"), t.user_tags.get("benchmark-name"))))


def add_race_filters(p: argparse.ArgumentParser) -> None:
    p.add_argument("--track", help="races/trials: only this track")
    p.add_argument("--challenge", help="races/trials: only this challenge")
    p.add_argument("--from-date", metavar="yyyyMMdd", help="races/trials: started on or after this day (UTC)")
    p.add_argument("--to-date", metavar="yyyyMMdd", help="races/trials: started on or before this day (UTC)")
    p.add_argument("--user-tags", "--user-tag", dest="filter_user_tags", metavar="K:V,...",
                   help="races/trials: only those with every one of these user tags")
    p.add_argument("--benchmark-name", help="races/trials: only those whose 'name' or 'benchmark-name' tag is this")
    p.add_argument("--format", choices=["text", "json"], default="text", help="races/trials: text or json")


def _day(value: str | None, flag: str) -> date | None:
    if value is None:
        return None
    try:
        return datetime.strptime(value, "%Y%m%d").date()
    except ValueError:
        raise ConfigError(f"{flag}={value}: use yyyyMMdd, e.g. 20261126") from None


def race_filter(a: argparse.Namespace) -> RaceFilter:
    tags: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in (a.filter_user_tags or "").split(","))):
        k, sep, v = part.partition(":")
        if not sep or not k:
            raise ConfigError(f"--user-tags: '{part}' is not key:value")
        tags[k.strip()] = v.strip()
    return RaceFilter(track=a.track, challenge=a.challenge, from_date=_day(a.from_date, "--from-date"),
                      to_date=_day(a.to_date, "--to-date"), user_tags=tags, benchmark_name=a.benchmark_name)


def races_json(trials: list[TrialInfo], statuses: dict[str, str]) -> str:
    """Rally's ``list races --format json`` fields, plus bench's status and track source."""
    def one(t: TrialInfo) -> dict[str, Any]:
        return {"race-id": t.id, "race-timestamp": t.start_time.astimezone(timezone.utc).strftime("%Y%m%dT%H%M%SZ"),
                "track": t.track, "challenge": t.challenge, "car": "+".join(t.car) or "external",
                "track-params": t.track_params, "user-tags": t.user_tags, "pipeline": t.pipeline,
                "test-mode": t.test_mode, "status": statuses.get(t.id, t.status),
                "distribution-version": next((c.get("version") for c in t.clusters if c.get("version")), None),
                "track-source": t.track_source}
    return json.dumps([one(t) for t in trials], indent=2, default=str)
