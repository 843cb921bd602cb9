"""Render a Summary as a Rally-like report: Metric | Task | Value | Unit.

table and markdown show rounded, human-readable values (2 decimals, thousands separators) followed by
the summary's notes; csv and json carry the raw values (machine-readable, full precision). Every format
carries the distinct error messages of failed requests with their counts: in the notes (table, markdown,
json), as ``errors`` (json) and as ``error: <message>`` rows counting requests (csv, which has no notes).
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
from pathlib import Path
from typing import Literal

from tabulate import tabulate

from bench.errors import ConfigError
from bench.redact import redact, redact_text
from bench.summary import Summary

ReportFormat = Literal["table", "markdown", "csv", "json"]
FORMATS: tuple[str, ...] = ("table", "markdown", "csv", "json")
HEADERS = ["Metric", "Task", "Value", "Unit"]


def format_value(v: float | int) -> str:
    """Human-readable number: ints with thousands separators, floats with 2 decimals, tiny floats with
    3 significant digits so they do not collapse to 0.00."""
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, int):
        return f"{v:,}"
    if math.isnan(v) or math.isinf(v):
        return str(v)
    if v != 0 and abs(v) < 0.01:
        return f"{v:.3g}"
    return f"{v:,.2f}"


def render_summary(summary: Summary, fmt: ReportFormat = "table") -> str:
    if fmt not in FORMATS:
        raise ConfigError(f"unknown report format {fmt!r}: use one of {', '.join(FORMATS)}")
    rows = summary.rows()
    notes = [redact_text(n) for n in summary.notes]
    errors = error_records(summary)
    if fmt == "json":
        return json.dumps(redact({"rows": [r.model_dump() for r in rows], "notes": notes, "errors": errors}),
                          indent=2) + "\n"
    if fmt == "csv":
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(HEADERS)
        for r in rows:
            w.writerow([redact_text(r.metric), redact_text(r.task), r.value, r.unit])
        for e in errors:
            w.writerow([f"error: {e['message']}", redact_text(e["task"]), e["count"], "requests"])
        return buf.getvalue()
    table = [[r.metric, r.task, format_value(r.value), r.unit] for r in rows]
    text = tabulate(table, headers=HEADERS, tablefmt="simple" if fmt == "table" else "github",
                    colalign=("left", "left", "right", "left"), disable_numparse=True)
    text = redact_text(text)
    if notes:
        bullet = "[WARNING] " if fmt == "table" else "- **Warning:** "
        text += "\n\n" + "\n".join(bullet + n for n in notes)
    return text + "\n"


def error_records(summary: Summary) -> list[dict[str, str | int]]:
    """One record per task and distinct error message of its failed requests: task, message (redacted), count."""
    return [{"task": t.task, "message": redact_text(e.message), "count": e.count} for t in summary.tasks
            for e in t.error_messages]


def check_report_file(path: Path | str) -> None:
    """Fail before a race, not after it, when its report could not be written."""
    p = Path(path).expanduser()
    if p.is_dir():
        raise ConfigError(f"--report-file {p} is a folder: name a file in it")
    if p.exists():
        if not os.access(p, os.W_OK):
            raise ConfigError(f"cannot write report to {p}: permission denied: choose a writable --report-file")
        return
    folder = next((d for d in (p.parent, *p.parent.parents) if d.exists()), None)
    if folder is None or not folder.is_dir() or not os.access(folder, os.W_OK | os.X_OK):
        raise ConfigError(f"cannot write report to {p}: {folder} is not a writable folder: "
                          "choose a writable --report-file")


def write_report(text: str, path: Path | str, *, option: str = "--report-file") -> Path:
    """Write a rendered report, creating parent folders; ``option`` names the flag to fix in the error."""
    p = Path(path).expanduser()
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    except OSError as e:
        raise ConfigError(f"cannot write report to {p}: {e.strerror or e}: choose a writable {option}") from e
    return p
