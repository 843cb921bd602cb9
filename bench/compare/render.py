"""Render a Comparison: terminal (rich), GitHub-flavoured markdown (pastes into a gist as is), csv, json.

Layout: with one candidate, Metric | Task | Baseline | Candidate | Δ | Δ % | Unit | [95 % CI of Δ %] | Result;
with several, Metric | Task | Baseline | <cand 1> | Δ % | <cand 2> | Δ % | ... | Unit, the result inside each
Δ % cell (the layout of the classic CCR study). Results follow each row's better direction, not the sign.
"""

from __future__ import annotations

import csv
import io
import json
import re
import textwrap
from typing import Any, Literal

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text
from tabulate import tabulate

from bench.compare.core import CandidateCell, CompareRow, Comparison
from bench.compare.headline import compare_headline, short_metric
from bench.results.fit_table import fit
from bench.results.report import format_value
from bench.util.errors import ConfigError
from bench.util.numbers import BOOL_UNIT, yes_no
from bench.util.redact import redact, redact_text

CompareFormat = Literal["table", "markdown", "csv", "json"]
FORMATS: tuple[str, ...] = ("table", "markdown", "csv", "json")
_STYLE = {"improvement": "bold green", "regression": "bold red", "changed": "yellow"}


def result_text(row: CompareRow, cell: CandidateCell) -> str:
    """What a row's result cell says, e.g. 'regression', 'within noise', 'worse, not judged'; a row of a task
    with failed requests says so after it, so no change is read as the cluster's alone."""
    text = _verdict_text(row, cell)
    if row.task_failed and text:
        return f"{text} (task had errors: {row.task_failed} failed)"
    return text


def _verdict_text(row: CompareRow, cell: CandidateCell) -> str:
    v = cell.verdict
    if v == "not judged" and cell.diff is not None:
        better = (cell.diff > 0) == row.higher_is_better
        return f"{'better' if better else 'worse'}, not judged"
    if v == "n/a" or cell.value is None:
        return "" if cell.value is not None else "missing"
    return v


def _signed(v: float | None, suffix: str = "") -> str:
    if v is None:
        return ""
    text = format_value(abs(v))
    sign = "+" if v > 0 else ("-" if v < 0 else "")
    return f"{sign}{text}{suffix}"


def _pct(v: float | None) -> str:
    return "" if v is None else f"{'+' if v > 0 else ''}{v:,.2f}%"


def _ci(row: CompareRow, cell: CandidateCell) -> str:
    if cell.ci_pct is not None:
        lo, hi = cell.ci_pct
        return f"{_pct(lo)} … {_pct(hi)}"
    if cell.ci is not None:
        return f"{_signed(cell.ci.low)} … {_signed(cell.ci.high)} {row.unit}".rstrip()
    return ""


def _value(v: float | None) -> str:
    return "" if v is None else format_value(v)


def side_lines(cmp: Comparison) -> list[str]:
    lines = []
    for role, s in [("Baseline", cmp.baseline), *[("Candidate", c) for c in cmp.candidates]]:
        ids = ", ".join(i[:8] for i in s.ids)
        n = len(s.trials)
        lines.append(f"{role} {s.label}: {n} trial{'s' if n != 1 else ''} ({ids}), selected by {s.selector}")
    if cmp.judged:
        method = {"auto": "Welch's t below 10 trials per side, bootstrap from 10"}.get(cmp.ci_method, cmp.ci_method)
        lines.append(f"Values are means over each side's trials; Δ is judged with a {cmp.confidence:.0%} "
                     f"confidence interval of the difference of means ({method}).")
    if cmp.noise_threshold_pct:
        lines.append(f"Changes smaller than {cmp.noise_threshold_pct:g}% count as noise.")
    return lines


def table_headers(cmp: Comparison) -> list[str]:
    if len(cmp.candidates) == 1:
        h = ["Metric", "Task", "Baseline", "Candidate", "Δ", "Δ %", "Unit"]
        if cmp.judged:
            h.append(f"{cmp.confidence:.0%} CI of Δ %")
        return h + ["Result"]
    h = ["Metric", "Task", cmp.baseline.label]
    for c in cmp.candidates:
        h += [c.label, "Δ %"]
    return h + ["Unit"]


def _bool_row(cmp: Comparison, r: CompareRow) -> list[str]:
    if len(cmp.candidates) == 1:
        c = r.candidates[0]
        changed = "" if not c.values or yes_no(c.values) == yes_no(r.baseline_values) else "changed"
        return [r.metric, r.scope, yes_no(r.baseline_values), yes_no(c.values), "", "", "",
                *([""] if cmp.judged else []), changed]
    row = [r.metric, r.scope, yes_no(r.baseline_values)]
    for c in r.candidates:
        row += [yes_no(c.values) if c.values else "missing", ""]
    return row + [""]


def table_rows(cmp: Comparison) -> list[list[str]]:
    """The table as strings (also the markdown body)."""
    out = []
    for r in cmp.rows:
        if r.unit == BOOL_UNIT:  # yes/no per side; a difference of booleans has no Δ or %
            out.append(_bool_row(cmp, r))
            continue
        if len(cmp.candidates) == 1:
            c = r.candidates[0]
            row = [r.metric, r.scope, _value(r.baseline), _value(c.value), _signed(c.diff), _pct(c.diff_pct), r.unit]
            if cmp.judged:
                row.append(_ci(r, c))
            row.append(result_text(r, c))
        else:
            row = [r.metric, r.scope, _value(r.baseline)]
            for c in r.candidates:
                res = result_text(r, c)
                row += [_value(c.value), f"{_pct(c.diff_pct)} {res}".strip() if c.value is not None else res]
            row.append(r.unit)
        out.append(row)
    return out


def _footer(cmp: Comparison, bullet: str) -> list[str]:
    lines = []
    for o in cmp.only_in:
        where = ", ".join(o["sides"]) or "no side"
        lines.append(f"{bullet}Only in {where}: {o['metric']}" + (f" ({o['task']})" if o["task"] else "")
                     + (f" (task had errors: {o['task_failed']} failed)" if o.get("task_failed") else ""))
    lines += [f"{bullet}Warning: {w}" for w in cmp.warnings]
    return lines


def _markdown(cmp: Comparison) -> str:
    rows = table_rows(cmp)
    if len(cmp.candidates) == 1:
        rows = [r[:-1] + [markdown_result(r[-1])] for r in rows]
    else:
        rows = [[markdown_result(x) if i >= 3 and (i - 3) % 2 == 1 else x for i, x in enumerate(r)] for r in rows]
    head, sentences = headline_comparison(cmp)
    text = f"## {headline_title(cmp)}\n\n"
    text += "".join(f"- **Warning:** {w}\n" for w in cmp.warnings) + ("\n" if cmp.warnings else "")
    if head.rows:
        hrows = table_rows(head)
        if len(cmp.candidates) == 1:
            hrows = [r[:-1] + [markdown_result(r[-1])] for r in hrows]
        text += tabulate(hrows, headers=table_headers(head), tablefmt="github", disable_numparse=True) + "\n\n"
    text += "\n".join(sentences) + "\n\n## All rows\n\n"
    text += "\n".join(f"- {line}" for line in side_lines(cmp)) + "\n\n"
    text += tabulate(rows, headers=table_headers(cmp), tablefmt="github", disable_numparse=True)
    foot = [line for line in _footer(cmp, "- ") if not line.startswith("- Warning: ")]
    if foot:
        text += "\n\n" + "\n".join(foot)
    return text + "\n"


def markdown_result(text: str) -> str:
    for word in ("improvement", "regression"):
        if re.search(rf"\b{word}\b", text):
            return re.sub(rf"\b{word}\b", f"**{word}**", text, count=1)
    return text


def headline_comparison(cmp: Comparison) -> tuple[Comparison, list[str]]:
    h = compare_headline(cmp)
    rows = [r.model_copy(update={"metric": short_metric(r.metric)}) for r in h.rows]
    return cmp.model_copy(update={"rows": rows}), h.sentences


def _styled_rows(cmp: Comparison) -> list[list[Text]]:
    out = []
    for r, strings in zip(cmp.rows, table_rows(cmp)):
        cells: list[Text] = [Text(s) for s in strings]
        if len(cmp.candidates) == 1:
            style = _STYLE.get(r.candidates[0].verdict)
            if style:
                cells[-1].stylize(style)
        else:
            for k, c in enumerate(r.candidates):
                style = _STYLE.get(c.verdict)
                if style:
                    cells[3 + 2 * k + 1].stylize(style)
        out.append(cells)
    return out


def _fitted(cmp: Comparison, width: int) -> tuple[Table, list[str], int]:
    headers = table_headers(cmp)
    numeric_names = {"Baseline", "Candidate", "Δ", "Δ %", cmp.baseline.label, *[c.label for c in cmp.candidates]}
    numeric = [h in numeric_names and i >= 2 for i, h in enumerate(headers)]
    ci = next((h for h in headers if h.endswith("CI of Δ %")), "")
    return fit(headers, _styled_rows(cmp), numeric, width, drop_order=["Δ", ci, "Unit"])


def headline_title(cmp: Comparison) -> str:
    def side(s: Any) -> str:
        return f"{s.label} ({len(s.trials)} trial{'s' if len(s.trials) != 1 else ''})"

    return f"Headline: {', '.join(side(c) for c in cmp.candidates)} vs baseline {side(cmp.baseline)}"


def _wrapped(lines: list[str], width: int, style: str = "") -> Text:
    """Lines wrapped at spaces to ``width`` (continuations indented two columns), as the tables are fitted: the
    terminal prints with soft wrap (a line is never broken by the terminal), so each line is cut here."""
    out: list[str] = []
    for line in lines:
        out += textwrap.wrap(line, max(20, width), subsequent_indent="  ", break_on_hyphens=False) or [""]
    return Text("\n".join(out), style=style)


def comparison_renderable(cmp: Comparison, *, width: int = 200, full: bool = True) -> Group:
    """A rich renderable for a terminal ``width`` columns wide: sides, warnings, the headline (key rows with Δ %,
    CI and result; one sentence per candidate), then the full table (``full``) or how to get it. Numbers are
    never cut: columns of low priority are left out first (and named), text wraps."""
    head, sentences = headline_comparison(cmp)
    parts: list[Any] = [_wrapped([headline_title(cmp)], width, "bold")]
    if cmp.warnings:
        parts.append(_wrapped([f"Warning: {w}" for w in cmp.warnings], width, "yellow"))
    if head.rows:
        table, dropped, _ = _fitted(head, width)
        parts.append(table)
        if dropped:
            parts.append(_wrapped([f"(left out to fit {width} columns: {', '.join(dropped)}; --format=markdown has "
                                   f"them)"], width))
    parts += [Text(""), _wrapped(sentences, width), Text(""), _wrapped(side_lines(cmp), width)]
    if full:
        table, dropped, _ = _fitted(cmp, width)
        parts += [Text(""), Text(f"All {len(cmp.rows)} rows", style="bold"), table]
        if dropped:
            parts.append(_wrapped([f"(left out to fit {width} columns: {', '.join(dropped)}; --format=markdown has "
                                   f"them)"], width))
        only = [line for line in _footer(cmp, "") if not line.startswith("Warning: ")]
        if only:
            parts += [Text(""), _wrapped(only, width, "yellow")]
    else:
        parts += [Text(""), Text(f"({len(cmp.rows)} rows in the full comparison: add --all to see them)")]
    return Group(*parts)


def _records(cmp: Comparison) -> list[dict[str, Any]]:
    recs = []
    for r in cmp.rows:
        for side, c in zip(cmp.candidates, r.candidates):
            recs.append({
                "metric": r.metric, "task": r.scope, "unit": r.unit, "higher_is_better": r.higher_is_better,
                "baseline": cmp.baseline.label, "baseline_value": r.baseline, "baseline_n": len(r.baseline_values),
                "candidate": side.label, "candidate_value": c.value, "candidate_n": len(c.values),
                "diff": c.diff, "diff_pct": c.diff_pct,
                "ci_low": c.ci.low if c.ci else None, "ci_high": c.ci.high if c.ci else None,
                "ci_method": c.ci.method if c.ci else None, "result": c.verdict,
                "task_failed_requests": r.task_failed,
                **({"baseline_value": yes_no(r.baseline_values), "candidate_value": yes_no(c.values), "diff": None,
                    "diff_pct": None, "unit": ""} if r.unit == BOOL_UNIT else {}),
                # each side whose own scope was compared under another cluster role: label -> its scope
                "mapped_from": "; ".join(f"{k}: {v}" for k, v in r.mapped_from.items()),
                # each side whose value is partial (incomplete telemetry): label -> why
                "partial": "; ".join(f"{k}: {v}" for k, v in r.partial.items()),
            })
    return recs


def to_json(cmp: Comparison) -> dict[str, Any]:
    def side(s: Any) -> dict[str, Any]:
        return {"label": s.label, "selector": s.selector, "trials": s.ids}

    return redact({
        "baseline": side(cmp.baseline), "candidates": [side(c) for c in cmp.candidates],
        "confidence": cmp.confidence, "ci_method": cmp.ci_method, "noise_threshold_pct": cmp.noise_threshold_pct,
        "rows": [{**rec, "mapped_from": r.mapped_from, "baseline_values": r.baseline_values,
                  "candidate_values": c.values}
                 for rec, (r, c) in zip(_records(cmp), ((r, c) for r in cmp.rows for c in r.candidates))],
        "only_in": cmp.only_in, "warnings": cmp.warnings,
    })


def render_comparison(cmp: Comparison, fmt: CompareFormat = "table", *, full: bool = True, width: int = 200) -> str:
    """The comparison as text; ``table`` is the terminal layout without colours, fitted to ``width`` columns,
    warnings wrapped as the tables are (``full``: with the full table after the headline; files always get it)."""
    if fmt not in FORMATS:
        raise ConfigError(f"unknown compare format {fmt!r}: use one of {', '.join(FORMATS)}")
    if fmt == "json":
        return json.dumps(to_json(cmp), indent=2) + "\n"
    if fmt == "csv":
        buf = io.StringIO()
        recs = _records(cmp)
        fields = list(recs[0]) if recs else ["metric", "task", "unit"]
        w = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n")
        w.writeheader()
        w.writerows(recs)
        return redact_text(buf.getvalue())
    if fmt == "markdown":
        return redact_text(_markdown(cmp))
    console = Console(file=io.StringIO(), width=width, record=True, color_system=None, soft_wrap=True)
    console.print(comparison_renderable(cmp, width=width, full=full))
    return redact_text(console.export_text())
