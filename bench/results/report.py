"""Render a Summary: the headline first (``bench.results.headline``), then the Rally-like report Metric | Task | Value | Unit.

The terminal shows the headline and the notes, the full table with ``--all``; report files (table and
markdown) carry headline and full table. table and markdown show rounded, human-readable values (2 decimals,
thousands separators, sizes in the unit their magnitude calls for, no scientific notation); the table leaves
out Rally's min/median/max-across-primary-shards rows where they only repeat the total (one shard); both end with
the summary's notes; csv and json carry the raw values (machine-readable, full precision). Every format
carries the distinct error messages of failed requests with their counts: in the notes (table, markdown,
json), as ``errors`` (json, with failed bulk items and first/last times) and as ``error: <message>`` rows
counting requests, and documents for bulk items (csv, which has no notes).
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
from pathlib import Path
from typing import Any, Literal, TypedDict

from rich.console import Console
from tabulate import tabulate

from bench.results.fit_table import fit
from bench.results.headline import Headline, race_headline
from bench.results.sections import MetricRow, row_cells, section_tables
from bench.results.summary import Summary
from bench.results.threshold_report import threshold_csv_rows, threshold_records, threshold_text
from bench.util.errors import ConfigError
from bench.util.numbers import BOOL_UNIT, compact, percent, plain, rescale, value_text
from bench.util.redact import redact, redact_text

ReportFormat = Literal["table", "markdown", "csv", "json"]
FORMATS: tuple[str, ...] = ("table", "markdown", "csv", "json")
HEADERS = ["Metric", "Task", "Value", "Unit"]


def format_value(v: float | int) -> str:
    """Human-readable number: ints with thousands separators, floats with 2 decimals, tiny floats with
    3 significant digits so they do not collapse to 0.00 (never in scientific notation)."""
    return plain(v)


def _percent_cell(v: float | int) -> str:
    """A percentage row's value: never 0 when it is not (``bench.util.numbers.percent``)."""
    return percent(v, 2)


def shown_rows(summary: Summary, *, collapse: bool = True) -> list[MetricRow]:
    """The rows a reader gets in table/markdown: sizes rescaled; with ``collapse`` (the terminal table) Rally's
    per-shard rows that only repeat the total left out."""
    rows = summary.rows()
    totals = {r.metric: r.value for r in rows if not r.task}
    out = []
    for r in rows:
        m = _ACROSS.match(r.metric)
        if collapse and m and not r.task and totals.get(f"Cumulative {m.group(1)} of primary shards") == r.value and all(
                totals.get(f"{k} cumulative {m.group(1)} across primary shards") == r.value
                for k in ("Min", "Median", "Max")):
            continue
        value, unit = rescale(r.value, r.unit)
        out.append(r.model_copy(update={"value": value, "unit": unit}))
    return out


_ACROSS = re.compile(r"^(?:Min|Median|Max) cumulative (.+) across primary shards$")


def render_summary(summary: Summary, fmt: ReportFormat = "table", *, full: bool = True, width: int = 100) -> str:
    """The summary in ``fmt``; table/markdown start with the headline, and ``full=False`` (the terminal without
    ``--all``) leaves out the full table but says how many rows it has."""
    if fmt not in FORMATS:
        raise ConfigError(f"unknown report format {fmt!r}: use one of {', '.join(FORMATS)}")
    rows = summary.rows()
    notes = [redact_text(n) for n in summary.notes]
    errors = error_records(summary)
    if fmt == "json":
        return json.dumps(redact(summary_document(summary)), indent=2) + "\n"
    if fmt == "csv":
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow([*HEADERS, "Partial"])
        for r in rows:
            value, unit = value_text(r.value, r.unit, str(r.value)) if r.unit == BOOL_UNIT else (r.value, r.unit)
            w.writerow([redact_text(r.metric), redact_text(r.task), value, unit, r.partial or ""])
        for e in errors:
            w.writerow([f"error: {e['message']}", redact_text(e["task"]), e["count"], "requests", ""])
            if e["documents"]:
                w.writerow([f"error: {e['message']}", redact_text(e["task"]), e["documents"], "documents", ""])
        w.writerows([[redact_text(str(c)) for c in row] for row in threshold_csv_rows(summary)])
        return buf.getvalue()
    shown = shown_rows(summary, collapse=fmt == "table")
    text = render_headline(race_headline(summary), fmt, width=width)
    if thresholds := threshold_text(summary, fmt):  # shown on the terminal too: a CI log's first question
        text += ("\n\n" if text else "") + thresholds
    if full:
        table = [[r.metric, r.task, *row_cells(r, _percent_cell if r.unit == "%" else format_value)] for r in shown]
        body = tabulate(table, headers=HEADERS, tablefmt="simple" if fmt == "table" else "github",
                        colalign=("left", "left", "right", "left"), disable_numparse=True)
        text += ("\n\n" if text else "") + ("## All metrics\n\n" if fmt == "markdown" and text else "") + body
        for t in section_tables(summary.sections):  # e.g. a redline's curve, one row per step
            grid = tabulate(t.rows, headers=t.headers, tablefmt="simple" if fmt == "table" else "github",
                            disable_numparse=True)
            text += f"\n\n{'## ' if fmt == 'markdown' else ''}{t.name}\n\n{grid}"
    else:
        text += f"\n\n({len(shown)} rows in the full table: add --all to see them)"
    text = redact_text(text)
    if notes:
        bullet = "[WARNING] " if fmt == "table" else "- **Warning:** "
        text += "\n\n" + "\n".join(bullet + n for n in notes)
    return text + "\n"


def summary_document(summary: Summary) -> dict[str, Any]:
    """The summary as JSON (not yet redacted): rows with raw values -- a yes/no row's value true or false --,
    notes and errors."""
    # exclude_none: "partial" only where a row is partial
    rows = [dict(r.model_dump(exclude_none=True), value=bool(r.value)) if r.unit == BOOL_UNIT
            else r.model_dump(exclude_none=True) for r in summary.rows()]
    doc = {"rows": rows, "notes": [redact_text(n) for n in summary.notes], "errors": error_records(summary)}
    if thresholds := threshold_records(summary):
        doc["thresholds"] = thresholds
    return doc


class ErrorRecord(TypedDict):
    task: str
    message: str  # redacted
    count: int  # requests
    documents: int  # documents that failed with it (bulk items, or all of a bulk that failed whole)
    first_s: float | None  # seconds after the step's start: the first and the last request that got it
    last_s: float | None


def error_records(summary: Summary) -> list[ErrorRecord]:
    """One record per task and kind of error of its failed requests: task, message (redacted), count of requests,
    failed bulk items, first and last time."""
    return [{"task": t.task, "message": redact_text(e.message), "count": e.count, "documents": e.documents,
             "first_s": e.first_s, "last_s": e.last_s} for t in summary.tasks for e in t.error_messages]


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


def headline_tables(h: Headline) -> list[tuple[list[str], list[list[str]], list[bool]]]:
    """(headers, rows, numeric column flags) of the headline's tables: one line per task, then the rows
    extensions mark (cluster resources, CCR). Headers may hold a line break (the terminal shows two lines)."""
    tables = []
    if h.tasks:
        label = h.tasks[0].high_label if len({t.high_label for t in h.tasks}) == 1 else "high"
        units = {t.unit for t in h.tasks if t.throughput}
        one_unit = units.pop() if len(units) == 1 else None
        rows = []
        for t in h.tasks:
            tp = " / ".join(compact(v) for v in t.throughput) if t.throughput else "none: all failed"
            if t.throughput and one_unit is None:
                tp += f" {t.unit}"
            lat = " / ".join(compact(v) for v in t.latency) if t.latency else ""
            svc = " / ".join(compact(v) for v in t.service_time) if t.service_time else ""
            if label == "high" and t.latency:
                lat, svc = f"{lat} ({t.high_label})", f"{svc} ({t.high_label})"
            errors = f"{percent(t.error_rate)}%" + (f" ({t.failed_requests:,})" if t.failed_requests else "")
            rows.append([t.task, tp, lat, svc, errors])
        tp_head = f"Throughput{' ' + one_unit if one_unit else ''}\nmin / median / max"
        tables.append((["Task", tp_head, f"Latency ms\np50 / {label}", f"Service time ms\np50 / {label}",
                        "Errors"], rows, [False, True, True, True, True]))
    if h.other:
        rows = []
        for title, r in h.other:
            value, unit = rescale(r.value, r.unit)
            cells = row_cells(r.model_copy(update={"value": value, "unit": unit}), compact)
            rows.append([title, r.metric, r.task, " ".join(cells).rstrip()])
        tables.append((["", "Metric", "Where", "Value"], rows, [False, False, False, True]))
    return tables


def render_headline(h: Headline, fmt: ReportFormat = "table", *, width: int = 100) -> str:
    """The headline as text: tables fitted to ``width`` (text columns wrap, numbers never) for the terminal
    and table files, pipe tables under '## Headline' for markdown; '' when there is nothing to head."""
    tables = headline_tables(h)
    if not tables:
        return ""
    if fmt == "markdown":
        parts = ["## Headline"]
        for headers, rows, numeric in tables:
            parts.append(tabulate(rows, headers=[x.replace("\n", " ") for x in headers], tablefmt="github",
                                  disable_numparse=True, colalign=tuple("right" if n else "left" for n in numeric)))
        return "\n\n".join(parts)
    fitted = [fit(headers, rows, numeric, width) for headers, rows, numeric in tables]
    console = Console(file=io.StringIO(), width=max(width, *(f[2] for f in fitted)), record=True,
                      color_system=None, soft_wrap=False)
    console.print("Headline", style="bold")
    for table, _, _ in fitted:
        console.print(table)
    return "\n".join(line.rstrip() for line in console.export_text().rstrip("\n").splitlines())
