"""Adaptive repetitions of an experiment: interleaved rounds (one more repetition of every variant each) until the
confidence interval of the study's main row's Δ against the baseline (the median throughput of each variant's
indexing task, ``bench.compare.main_row``) is within a target for every variant, or a time budget or the maximum is
spent, saying which ended it.

In an experiment file::

    repetitions: {min: 2, max: 20, until: {ci-within: 2%}, time-budget: 2h}

The run plans ``max`` repetitions; after each round from ``min`` on, ``decide`` reads the run's stored trials and
says whether to go on. Everything it reads is in the store, so ``--resume`` decides as the first run would have
(the time budget counts the stored trials' own durations).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from bench.util.errors import ConfigError

if TYPE_CHECKING:
    from bench.trials.model import TrialInfo, TrialReader

Ending = Literal["resolved", "time budget", "max repetitions"]
_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def percent_value(v: Any) -> Any:
    """"2%", "2 %" or 2 -> 2.0 (percent); anything else is left for pydantic to refuse."""
    if isinstance(v, str):
        m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*%?\s*", v)
        if m:
            return float(m.group(1))
    return v


def seconds_value(v: Any) -> Any:
    """"2h", "90m", "45s", "1d" or a number of seconds -> seconds."""
    if isinstance(v, str):
        m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*", v)
        if not m:
            raise ValueError(f"{v!r} is not a duration like 45s, 90m, 2h or 1d")
        return float(m.group(1)) * _UNITS[m.group(2) or "s"]
    return v


class Until(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    ci_within: float = Field(alias="ci-within", gt=0, lt=1000)  # ± % of the baseline's mean

    @field_validator("ci_within", mode="before")
    @classmethod
    def _pct(cls, v: Any) -> Any:
        return percent_value(v)


class AdaptiveRepetitions(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    min: int = Field(default=2, ge=2, le=1000)  # 2: the spread within a variant needs two
    max: int = Field(ge=2, le=1000)
    until: Until
    time_budget: float | None = Field(default=None, alias="time-budget", gt=0)  # seconds

    @field_validator("time_budget", mode="before")
    @classmethod
    def _secs(cls, v: Any) -> Any:
        return seconds_value(v)

    @model_validator(mode="after")
    def _order(self) -> AdaptiveRepetitions:
        if self.max < self.min:
            raise ValueError(f"max {self.max} is below min {self.min}")
        return self


def check_adaptive(raw: Any, where: str) -> None:
    """The mapping form of an experiment's ``repetitions``, checked with one line naming the field."""
    try:
        AdaptiveRepetitions.model_validate(raw)
    except ValidationError as e:
        err = e.errors()[0]
        loc = ".".join(["repetitions", *(str(x).replace("_", "-") for x in err["loc"])])
        msg = str(err["msg"]).removeprefix("Value error, ")
        raise ConfigError(f"{where}: field '{loc}': {msg}; e.g. repetitions: {{min: 2, max: 20, until: "
                          "{ci-within: 2%}, time-budget: 2h}") from None


def adaptive_text(a: AdaptiveRepetitions) -> str:
    """What --dry-run says of the rounds."""
    budget = f", or once another round would overrun the time budget of {duration_text(a.time_budget)}" \
        if a.time_budget is not None else ""
    return (f"Repetitions are adaptive: after each round from round {a.min} on, the run ends once every variant's 95 % "
            f"CI of Δ median indexing throughput against the baseline is within ±{a.until.ci_within:g} %{budget}; "
            f"at most {a.max} rounds (the races below are the most it runs).")


class Decision(BaseModel):
    stop: bool
    ending: Ending | None = None
    line: str  # what the run says after the round (and the report under the study table when it ended)


def duration_text(seconds: float) -> str:
    s = int(round(seconds))
    h, m, sec = s // 3600, s % 3600 // 60, s % 60
    return f"{h}h{m:02d}m" if h else f"{m}m{sec:02d}s" if m else f"{sec}s"


def spent_seconds(trials: list[TrialInfo], now: datetime | None = None) -> float:
    """The time the run's races took, each from its trial's start to its end (a race still open: to now)."""
    now = now or datetime.now(UTC)
    total = 0.0
    for t in trials:
        end = t.end_time or now
        start = t.start_time if t.start_time.tzinfo else t.start_time.replace(tzinfo=UTC)
        end = end if end.tzinfo else end.replace(tzinfo=UTC)
        total += max(0.0, (end - start).total_seconds())
    return total


class Spread(BaseModel):
    """The main row's Δ of one variant (track) against the baseline, with its confidence interval, in %."""

    variant: str
    diff_pct: float
    low_pct: float
    high_pct: float

    @property
    def half_pct(self) -> float:
        return (self.high_pct - self.low_pct) / 2.0

    def text(self) -> str:
        return f"{self.variant}: {self.diff_pct:+.1f} % (95 % CI {self.low_pct:+.1f} … {self.high_pct:+.1f} %)"


def main_row_spreads(store: TrialReader, tracks: list[tuple[str, list[str]]], labels: list[str],
                     tasks: dict[str, str]) -> list[Spread] | None:
    """Each candidate's Δ % of the study's main row (``bench.compare.main_row``) with its 95 % CI (the study's own
    method), for each track's (baseline selector, candidate selectors); ``labels``: the variants, baseline first;
    ``tasks``: a variant's indexing task where the study names one. None while some variant lacks two values
    (nothing is known of its spread)."""
    from bench.compare.main_row import indexing_medians
    from bench.compare.select import resolve_sides
    from bench.compare.stats import diff_ci

    out = []
    for ti, (baseline, candidates) in enumerate(tracks):
        try:
            base, cands, _notes = resolve_sides(store, baseline, candidates, labels)
        except Exception:  # noqa: BLE001 - e.g. a variant without a complete trial yet: not resolved
            return None
        ref = indexing_medians(base, tasks.get(base.label))
        for side in cands:
            values = indexing_medians(side, tasks.get(side.label))
            if len(ref) < 2 or len(values) < 2:
                return None
            mean = sum(ref) / len(ref)
            ci = diff_ci(ref, values)
            name = side.label if len(tracks) == 1 else f"{side.label} (track {ti})"
            out.append(Spread(variant=name, diff_pct=100 * ci.diff / abs(mean), low_pct=100 * ci.low / abs(mean),
                              high_pct=100 * ci.high / abs(mean)))
    return out


def decide(adaptive: AdaptiveRepetitions, rounds: int, spreads: list[Spread] | None, spent: float) -> Decision:
    """After ``rounds`` rounds: stop (and why) or go on. Pure."""
    target = adaptive.until.ci_within
    where = "; ".join(s.text() for s in spreads) if spreads else "the spread is not known yet"
    said = f"after {rounds} repetition{'s' if rounds != 1 else ''} per variant"
    if rounds >= adaptive.min and spreads and all(s.half_pct <= target for s in spreads):
        zero = ("" if all(s.low_pct > 0 or s.high_pct < 0 for s in spreads)
                else "; a CI holds 0: what differs is smaller than the target")
        return Decision(stop=True, ending="resolved",
                        line=f"Repetitions ended {said}: resolved, every 95 % CI of Δ within ±{target:g} % ({where}"
                             f"){zero}.")
    if rounds >= adaptive.max:
        return Decision(stop=True, ending="max repetitions",
                        line=f"Repetitions ended {said}: max repetitions ({adaptive.max}) reached before every 95 % CI "
                             f"of Δ was within ±{target:g} % ({where}).")
    budget = adaptive.time_budget
    per_round = spent / rounds if rounds else 0.0
    if budget is not None and rounds >= adaptive.min and spent + per_round > budget:
        return Decision(stop=True, ending="time budget",
                        line=f"Repetitions ended {said}: time budget {duration_text(budget)} spent "
                             f"({duration_text(spent)} used and a round takes about {duration_text(per_round)}: "
                             f"another would overrun it) before every 95 % CI of Δ was within ±{target:g} % ({where}).")
    return Decision(stop=False, line=f"Not resolved {said} (target ±{target:g} %: {where}): one more round.")
