"""The headline as report templates see it: the race headline's tables (``bench.results.headline``) for one trial, the
comparison headline's rows with Δ %, CI and verdict (``bench.compare.headline``) and one sentence per candidate
for a comparison -- as strings plus a CSS class per cell (verdict colours in HTML) and as markdown.

``headline`` context key: ``title``, ``tables`` (headers, rows, classes: one class string per cell --
"improvement", "regression", "noise" and/or "num"), ``sentences``, ``warnings``, ``markdown``.
"""

from __future__ import annotations

from typing import Any

from tabulate import tabulate

from bench.compare.core import Comparison
from bench.compare.render import headline_comparison, headline_title, markdown_result, table_headers, table_rows
from bench.results.headline import race_headline
from bench.results.report import headline_tables, render_headline
from bench.results.summary import Summary
from bench.util.redact import redact_text

# Verdict -> CSS class of the cells that carry it (green, red, grey).
VERDICT_CLASS = {"improvement": "improvement", "regression": "regression", "within noise": "noise",
                 "no change": "noise"}


def _table(headers: list[str], rows: list[list[str]], classes: list[list[str]]) -> dict[str, Any]:
    return {"headers": [redact_text(h) for h in headers], "rows": [[redact_text(c) for c in r] for r in rows],
            "classes": classes}


def trial_headline(summary: Summary | None) -> dict[str, Any]:
    """One trial: a line per working task, then the rows extensions mark (cluster resources, CCR)."""
    if summary is None:
        return {"title": "Headline", "tables": [], "sentences": [], "warnings": [], "markdown": ""}
    h = race_headline(summary)
    tables = [_table(headers, rows, [["num" if n else "" for n in numeric] for _ in rows])
              for headers, rows, numeric in headline_tables(h)]
    return {"title": "Headline", "tables": tables, "sentences": [], "warnings": [],
            "markdown": redact_text(render_headline(h, "markdown"))}


def _cell_classes(cmp: Comparison, headers: list[str]) -> list[list[str]]:
    """One class per cell: numbers right-aligned; the cells that say a candidate's change coloured by its verdict
    (with one candidate: Δ, Δ %, CI and Result; with several: each candidate's Δ % cell)."""
    out = []
    for r in cmp.rows:
        cls = ["" if i < 2 else "num" for i in range(len(headers))]  # Metric and Task are text
        if len(cmp.candidates) == 1:
            colour = VERDICT_CLASS.get(r.candidates[0].verdict, "")
            for i, h in enumerate(headers):
                if h in ("Δ", "Δ %", "Result") or h.endswith("CI of Δ %"):
                    cls[i] = f"{cls[i]} {colour}".strip()
                if h in ("Unit", "Result"):
                    cls[i] = cls[i].replace("num", "").strip()
        else:
            for k, c in enumerate(r.candidates):
                i = 3 + 2 * k + 1
                cls[i] = f"{cls[i]} {VERDICT_CLASS.get(c.verdict, '')}".strip()
            cls[-1] = ""  # Unit
        out.append(cls)
    return out


def compare_headline_view(cmp: Comparison) -> dict[str, Any]:
    """A comparison: the headline rows (short metric names) with Δ %, CI and verdict, one sentence per candidate."""
    head, sentences = headline_comparison(cmp)
    headers = table_headers(head)
    rows = table_rows(head)
    tables = [_table(headers, rows, _cell_classes(head, headers))] if head.rows else []
    title = headline_title(cmp)
    md = [f"## {title}", ""]
    md += [f"- **Warning:** {w}" for w in cmp.warnings] + ([""] if cmp.warnings else [])
    if head.rows:
        shown = [r[:-1] + [markdown_result(r[-1])] for r in rows] if len(cmp.candidates) == 1 else \
            [[markdown_result(x) if i >= 3 and (i - 3) % 2 == 1 else x for i, x in enumerate(r)] for r in rows]
        md += [tabulate(shown, headers=headers, tablefmt="github", disable_numparse=True), ""]
    md += sentences
    return {"title": title, "tables": tables, "sentences": [redact_text(s) for s in sentences],
            "warnings": [redact_text(w) for w in cmp.warnings], "markdown": redact_text("\n".join(md))}
