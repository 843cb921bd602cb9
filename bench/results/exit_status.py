"""What a run's outcome means to a scheduler: bench's exit codes, and the pure judgements behind the three that a
run which ended normally can still get -- it did not measure what it was for, its error rate was over
``--max-error-rate``, or a threshold failed (``bench.results.thresholds``).

A trial's stored status says how the run ended (``complete``, ``failed`` ...); these say whether a nightly job
may take its numbers: a race that ran to its end but whose task failed entirely, or whose CCR followers never
synced, is no measurement of that task or of replication, whatever its other rows say.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from bench.util.errors import ConfigError

if TYPE_CHECKING:
    from bench.results.summary import Summary

EXIT_OK = 0
EXIT_FAILED = 1  # a bench error: the run failed, a cluster could not be reached or started, the store refused
EXIT_BAD_INPUT = 2  # a bad option, config or track (argparse's usage errors too)
EXIT_REGRESSION = 3  # bench experiment --history --fail-on-regression: a key row regressed tonight
EXIT_UNMEASURED = 4  # ran to its end, but a key measurement could not be taken
EXIT_ERROR_RATE = 5  # ran to its end, measured, but a task's error rate is over --max-error-rate
EXIT_THRESHOLD = 99  # a --threshold (or a track's) failed, or stopped the race (abort-on-fail); k6's code for it
EXIT_INTERRUPTED = 130  # Ctrl-C or SIGTERM (stored as aborted)

_RATE = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*(%?)\s*$")


def parse_error_rate(text: str | float, flag: str = "--max-error-rate") -> float:
    """'1%' or '0.01' -> 0.01; a share of requests from 0 (no failed request allowed) to 1."""
    if isinstance(text, int | float):
        rate = float(text)
    else:
        m = _RATE.match(text)
        if m is None:
            raise ConfigError(f"{flag}={text}: not a rate; write a share of requests such as 0.01 or 1%")
        rate = float(m.group(1)) / (100.0 if m.group(2) else 1.0)
    if not 0.0 <= rate <= 1.0:
        raise ConfigError(f"{flag}={text}: a rate is between 0 and 1 (0 % and 100 %)")
    return rate


def unmeasured(summary: Summary | None) -> list[str]:
    """Why the run is no measurement of what it was for, one reason each: nothing stored, a task with no
    successful measured request, and what extensions recorded (``Summary.unmeasured``, e.g. CCR followers that
    never synced). Empty: every task measured something."""
    if summary is None:
        return ["no request was measured (no samples stored)"]
    out = []
    for t in summary.tasks:
        if t.requests == 0:
            out.append(f"task '{t.task}' has only warmup samples")
        elif t.throughput is None and not t.latency and t.failed_requests >= t.requests:
            # Not "error rate 100 %" alone: bulks whose items partly failed still indexed documents and have a
            # throughput. And not "no throughput" alone: a task kept out of reporting (Rally's admin operations,
            # include-in-reporting: false) succeeded without figures.
            out.append(f"every request of task '{t.task}' failed ({t.failed_requests:,} of {t.requests:,})")
    return out + list(summary.unmeasured)


def over_error_rate(summary: Summary | None, limit: float) -> list[str]:
    """The tasks whose error rate (failed measured requests / measured requests) is over ``limit``."""
    if summary is None:
        return []
    return [f"task '{t.task}' error rate {t.error_rate * 100:.2f} % ({t.failed_requests} of {t.requests} requests)"
            f" is over --max-error-rate {limit * 100:g} %"
            for t in summary.tasks if t.requests and t.error_rate > limit]


def run_exit_code(summary: Summary | None, max_error_rate: float | None) -> tuple[int, str | None]:
    """The exit code of a run that ended normally, with its one line (None when it is EXIT_OK). A race a threshold
    stopped exits EXIT_THRESHOLD whatever else it missed; then what was not measured, the error rate, the
    thresholds that failed, and last those that could not be evaluated (no measurement: EXIT_UNMEASURED)."""
    from bench.results.thresholds import aborted_by, results_of

    verdicts = results_of(summary)
    failed = [r.line for r in verdicts if r.result == "failed"]
    if (stopped := aborted_by(summary)) is not None:
        others = [r.line for r in verdicts if r.result == "failed" and not r.aborted]
        return EXIT_THRESHOLD, f"stopped by a threshold: {stopped}" + "".join(f"; threshold failed: {f}"
                                                                               for f in others)
    missing = unmeasured(summary)
    if missing:
        return EXIT_UNMEASURED, "not measured: " + "; ".join(missing)
    if max_error_rate is not None:
        over = over_error_rate(summary, max_error_rate)
        if over:
            return EXIT_ERROR_RATE, "; ".join(over)
    if failed:
        return EXIT_THRESHOLD, "threshold failed: " + "; ".join(failed)
    errors = [r.line for r in verdicts if r.result == "error"]
    if errors:
        return EXIT_UNMEASURED, "threshold " + "; threshold ".join(errors)
    return EXIT_OK, None
