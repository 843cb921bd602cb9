"""``--redline=task:NAME,p99:500ms,errors:0.1%,...``: the objective and the search's settings, validated once.

Besides (or instead of) the latency objective, a key registered as a step objective (``register_step_objective``,
e.g. ``ccr-lag:p99:5s``) judges every step too."""

from __future__ import annotations

import re

from pydantic import BaseModel, Field, model_validator

from bench.api import step_objective_type, step_objective_types
from bench.util.errors import ConfigError

OPTION = "--redline"


class RedlineSpec(BaseModel):
    """What the search looks for and how long each step runs."""

    task: str
    percentile: float = Field(default=99.0, gt=0, le=100)  # of latency (from the scheduled start), not service time
    latency_ms: float | None = Field(default=None, gt=0)  # the objective: that percentile at most this (None: none)
    # registered step objectives: key -> its value as written (e.g. "ccr-lag" -> "p99:5s")
    objectives: dict[str, str] = Field(default_factory=dict)
    cooldown_s: float | None = Field(default=None, ge=0)  # after each step's load (None: what the objectives need)
    max_error_rate: float = Field(default=0.0, ge=0, le=1)  # failed requests / requests, at most
    tolerance: float = Field(default=0.05, gt=0, lt=1)  # stop once (fail - pass) / pass is at most this
    warmup_s: float = Field(default=10.0, ge=0)
    measure_s: float = Field(default=30.0, gt=0)
    start: float | None = Field(default=None, gt=0)  # first target, requests/s (default: 1 per client)
    max_target: float = Field(default=1_000_000.0, gt=0)  # requests/s the search never exceeds
    max_steps: int = Field(default=20, ge=1)
    factor: float = Field(default=2.0, gt=1)  # exponential phase: target x factor (or / factor) per step
    runaway: float = Field(default=10.0, gt=1)  # a step stops once any latency exceeds this x the objective

    @model_validator(mode="after")
    def _start_below_max(self) -> RedlineSpec:
        if self.start is not None and self.start > self.max_target:
            raise ValueError(f"start {self.start:g} is above max {self.max_target:g}")
        return self

    @property
    def objective(self) -> str:
        """E.g. "p99 latency ≤ 500 ms, errors ≤ 0.1 %" (then each step objective in words)."""
        parts = [f"p{self.percentile:g} latency ≤ {self.latency_ms:,.6g} ms"] if self.latency_ms is not None else []
        parts.append(f"errors ≤ {self.max_error_rate * 100:.6g} %")
        for key, value in self.objectives.items():
            kind = step_objective_type(key)
            parts.append(kind.parse(value).objective if kind is not None else f"{key}:{value}")
        return ", ".join(parts)


_DURATION = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*(ms|s|m)?\s*$")
_PERCENT = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*(%)?\s*$")
_PCT_KEY = re.compile(r"^p([0-9]+(?:\.[0-9]+)?)$")


def _seconds(key: str, value: str, default_unit: str) -> float:
    m = _DURATION.match(value)
    if not m:
        raise ConfigError(f"{OPTION}: {key}:{value} is not a duration (e.g. 500ms, 2s)")
    scale = {"ms": 0.001, "s": 1.0, "m": 60.0}[m.group(2) or default_unit]
    return float(m.group(1)) * scale


def _fraction(key: str, value: str) -> float:
    m = _PERCENT.match(value)
    if not m:
        raise ConfigError(f"{OPTION}: {key}:{value} is not a percentage (e.g. 0.1%)")
    return float(m.group(1)) / 100.0


def _number(key: str, value: str) -> float:
    try:
        return float(value.removesuffix("/s").removesuffix("ops").strip())
    except ValueError:
        raise ConfigError(f"{OPTION}: {key}:{value} is not a number of requests/s") from None


def _checked_objective(key: str, value: str) -> str:
    kind = step_objective_type(key)
    assert kind is not None
    try:
        kind.parse(value)
    except ConfigError as e:
        raise ConfigError(f"{OPTION}: {key}:{value}: {e} (e.g. {kind.example})") from None
    return value


def parse_redline(text: str) -> RedlineSpec:
    """``task:index-append,p99:500ms,errors:0.1%`` plus optional ``tolerance:5%``, ``warmup:10s``,
    ``measure:30s``, ``cooldown:5s``, ``start:N`` and ``max:N`` (requests/s), ``steps:N``, ``factor:N``,
    ``runaway:N`` and registered step objectives (``KEY:VALUE``, the value may hold colons)."""
    fields: dict[str, object] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, sep, value = part.partition(":")
        key, value = key.strip().lower(), value.strip()
        if not sep or not key or not value:
            raise ConfigError(f"{OPTION}: '{part}' is not key:value")
        pct = _PCT_KEY.match(key)
        if pct:
            fields["percentile"] = float(pct.group(1))
            fields["latency_ms"] = _seconds(key, value, "ms") * 1000.0
        elif key == "task":
            fields["task"] = value
        elif key == "errors":
            fields["max_error_rate"] = _fraction(key, value)
        elif key == "tolerance":
            fields["tolerance"] = _fraction(key, value)
        elif key in ("warmup", "measure", "cooldown"):
            fields[f"{key}_s"] = _seconds(key, value, "s")
        elif step_objective_type(key) is not None:
            fields.setdefault("objectives", {})[key] = _checked_objective(key, value)  # type: ignore[index]
        elif key in ("start", "max"):
            fields["start" if key == "start" else "max_target"] = _number(key, value)
        elif key in ("steps", "factor", "runaway"):
            n = _number(key, value.removesuffix("x"))
            fields["max_steps" if key == "steps" else key] = int(n) if key == "steps" else n
        else:
            extra = "".join(f", {t.key}" for t in step_objective_types())
            raise ConfigError(f"{OPTION}: unknown key '{key}' (task, pNN, errors, tolerance, warmup, measure, "
                              f"cooldown, start, max, steps, factor, runaway{extra})")
    if "task" not in fields:
        raise ConfigError(f"{OPTION}: needs task:index-append")
    if "latency_ms" not in fields and not fields.get("objectives"):
        alternatives = "".join(f" or {t.example}" for t in step_objective_types())
        raise ConfigError(f"{OPTION}: needs p99:500ms{alternatives}")
    try:
        return RedlineSpec.model_validate(fields)
    except ValueError as e:  # pydantic's ValidationError is a ValueError
        errors = getattr(e, "errors", None)
        if callable(errors):
            err = errors()[0]
            where = ".".join(str(x) for x in err["loc"]) or "value"
            raise ConfigError(f"{OPTION}: {where}: {err['msg']}") from None
        raise ConfigError(f"{OPTION}: {e}") from None
