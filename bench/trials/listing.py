"""``bench list trials``: one entry per stored trial, with what makes trials comparable or not (test mode, car,
track params, user tags) under its status.

Each entry is an aligned line (id, start, track/challenge, mode, status) and an indented line of details (car,
track params, tags). In a terminal both wrap at its width, at spaces, and nothing is cut off; the trial id (what
the user copies) and the start of the status stay on the first line. Piped output keeps each part on one line,
so ``grep ID`` finds a trial's row with its status.
"""

from __future__ import annotations

import json
import textwrap
from typing import Any

from tabulate import tabulate

from bench.trials.model import TrialInfo

INDENT = " " * 14  # under the Started column: the trial id stands out at the left


def _value(v: Any) -> str:
    return v if isinstance(v, str) else json.dumps(v, sort_keys=True)


def _pairs(d: dict[str, Any]) -> str:
    return ", ".join(f"{k}={_value(v)}" for k, v in sorted(d.items())) or "-"


def _wrap(line: str, width: int | None, first: str, rest: str) -> list[str]:
    if width is None:
        return [first + line]
    return textwrap.wrap(line, width, initial_indent=first, subsequent_indent=rest, break_on_hyphens=False) or [""]


def render_trial_list(trials: list[TrialInfo], statuses: dict[str, str], width: int | None = None) -> str:
    """The trials, each line at most ``width`` columns (None: no wrapping)."""
    rows = [(t.id[:12], t.start_time.strftime("%Y-%m-%d %H:%M"), f"{t.track}/{t.challenge}",
             "test" if t.test_mode else "full", statuses.get(t.id, t.status)) for t in trials]
    lines = tabulate(rows, headers=["Trial", "Started (UTC)", "Track/challenge", "Mode", "Status"],
                     tablefmt="simple", disable_numparse=True).splitlines()
    out = _wrap(lines[0].rstrip(), width, "", INDENT)
    out.append(lines[1][:width] if width else lines[1])  # the rule under the header: dashes only
    out.append(INDENT + "car · track params · user tags")
    for t, line in zip(trials, lines[2:]):
        out += _wrap(line.rstrip(), width, "", INDENT)
        details = f"car {'+'.join(t.car) or '-'} · params {_pairs(t.track_params)} · tags {_pairs(t.user_tags)}"
        out += _wrap(details, width, INDENT, INDENT)
    return "\n".join(out)
