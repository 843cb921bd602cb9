"""What a pass/fail threshold says as written -- on the command line (``--threshold``), in a track or challenge, or in
an experiment -- read into ``ThresholdSpec`` (light: the race options import it at start). What it means and how
it is judged is ``bench.results.thresholds``."""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel

from bench.util.errors import ConfigError

TIME_MS = {"us": 0.001, "µs": 0.001, "ms": 1.0, "s": 1000.0, "m": 60_000.0}


class ThresholdSpec(BaseModel):
    """One threshold as given: where it applies, its expression, and k6's abort options."""

    scope: str
    expression: str  # e.g. "p99_latency<800ms", "p(95)<500", "error_rate<1%"
    abort_on_fail: bool = False
    delay_abort_eval_s: float = 0.0  # k6's delayAbortEval: no abort before the scope ran this long
    origin: str = "--threshold"  # where it was written: the flag, a track file, an experiment

    @property
    def text(self) -> str:
        return f"{self.scope}:{self.expression}"


def parse_cli(text: str, origin: str = "--threshold") -> ThresholdSpec:
    """``SCOPE:EXPRESSION[,abort-on-fail][,delay-abort-eval=10s]`` as given to ``--threshold``."""
    head, *opts = [p.strip() for p in text.split(",")]
    scope, sep, expression = head.rpartition(":")
    if not sep or not scope or not expression:
        raise ConfigError(f"{origin} {text!r}: write SCOPE:METRIC<LIMIT, e.g. 'index-append:p99_latency<800ms' or "
                          f"'*:error_rate<1%' (SCOPE: a task, * for every task, or an extension's scope)")
    abort, delay = False, 0.0
    for opt in opts:
        key, _, value = opt.partition("=")
        if key in ("abort-on-fail", "abortOnFail") and not value:
            abort = True
        elif key in ("delay-abort-eval", "delayAbortEval") and value:
            delay = parse_duration_s(value, f"{origin} {text!r}: delay-abort-eval")
        else:
            raise ConfigError(f"{origin} {text!r}: unknown option {opt!r}; use abort-on-fail or "
                              f"delay-abort-eval=DURATION")
    return ThresholdSpec(scope=scope, expression=expression, abort_on_fail=abort, delay_abort_eval_s=delay,
                         origin=origin)


def parse_k6_map(raw: Any, origin: str) -> list[ThresholdSpec]:
    """k6's ``thresholds`` map: scope -> [expression, or {threshold, abortOnFail, delayAbortEval}, ...]."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{origin}: 'thresholds' must map a task (or *) to a list of thresholds, e.g. "
                          f"{{\"index-append\": [\"p(99)<800ms\"]}}")
    out = []
    for scope, items in raw.items():
        for i, item in enumerate(items if isinstance(items, list) else [items]):
            where = f"{origin} thresholds[{scope!r}][{i}]"
            if isinstance(item, str):
                out.append(ThresholdSpec(scope=str(scope), expression=item, origin=origin))
                continue
            if not isinstance(item, dict) or not isinstance(item.get("threshold"), str):
                raise ConfigError(f"{where}: {item!r} is neither an expression nor {{\"threshold\": ..., "
                                  f"\"abortOnFail\": true}}")
            unknown = set(item) - {"threshold", "abortOnFail", "abort-on-fail", "delayAbortEval", "delay-abort-eval"}
            if unknown:
                raise ConfigError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}; use threshold, abortOnFail, "
                                  f"delayAbortEval")
            abort = item.get("abortOnFail", item.get("abort-on-fail", False))
            if not isinstance(abort, bool):
                raise ConfigError(f"{where}: abortOnFail={abort!r}: use true or false")
            delay = item.get("delayAbortEval", item.get("delay-abort-eval"))
            out.append(ThresholdSpec(scope=str(scope), expression=item["threshold"], abort_on_fail=abort,
                                     delay_abort_eval_s=parse_duration_s(delay, f"{where}: delayAbortEval")
                                     if delay is not None else 0.0, origin=origin))
    return out


def parse_duration_s(value: Any, where: str) -> float:
    m = re.match(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*(us|µs|ms|s|m)?\s*$", str(value))
    if m is None:
        raise ConfigError(f"{where}={value!r}: write a duration such as 10s or 500ms")
    return float(m.group(1)) * TIME_MS[m.group(2) or "s"] / 1000.0




def specs_of(value: Any, origin: str) -> list[ThresholdSpec]:
    """Thresholds as an option holds them: ``--threshold`` texts, stored specs, or k6's map (an experiment's)."""
    if value is None:
        return []
    if isinstance(value, dict):
        return parse_k6_map(value, origin)
    if isinstance(value, str):
        value = [value]
    out = []
    for v in value:
        out.append(parse_cli(v, origin) if isinstance(v, str) else ThresholdSpec.model_validate(v))
    return out
