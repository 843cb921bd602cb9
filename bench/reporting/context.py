"""What a report template sees: environment facts of each trial (never credentials) and the tables, as
plain dicts and lists so users can write their own Jinja2 templates against them.

Context keys (both modes): ``title``, ``mode`` ("trial" | "compare"), ``generated``, ``bench_version``,
``headline`` (``bench/reporting/headline_view.py``: the race or comparison headline, what reports show first),
``sides`` (label, selector, trials: list of ``environment()`` dicts), ``environment_table`` (headers, rows: one
column per trial), ``environment_summary`` (common: what every trial shares; per_trial: one row per trial with
only the facts that differ, ``changed`` flags), ``notes``; trial mode adds ``trial``,
``sections`` (name, headers, rows -- rows as lists of strings), ``summary_markdown`` and ``errors`` (task, message,
count per distinct error message of failed requests); compare mode adds
``comparison`` (the JSON form), ``sections`` (compare rows split as below), ``comparison_markdown``; html adds
``plots`` (key, title, div) and ``plotly_js``; both add ``plot_notes`` (series and plots left out, and why).
``study_tables`` (title, headers, rows, notes, classes: an experiment's study table and its history,
``bench/reporting/study.py`` / ``bench/reporting/history.py``; empty otherwise) comes right after the headline.
Sections: "Cluster totals", one per task, then one per registered summary section (``register_section``:
"Telemetry", "CCR"), each holding its rows and the rows of others it hides (CCR: rows whose metric names CCR).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import bench
from bench.compare.core import Comparison, Side
from bench.compare.render import side_lines, table_headers, table_rows, to_json
from bench.provision.facts_text import distribution_text
from bench.race.flags import applying_options
from bench.reporting.headline_view import compare_headline_view, trial_headline
from bench.reporting.placement import where_text
from bench.results.report import format_value
from bench.results.sections import row_cells, section_kinds, section_tables, section_title
from bench.results.summary import Summary, status_label
from bench.track.synthetic_corpora import corpora_text
from bench.trials.model import TrialInfo
from bench.util.redact import redact, redact_text

# Options worth showing in a report; client options and anything secret-like never are.
_SHOWN_OPTIONS = ("distribution_version", "nodes", "target_hosts", "car_params", "worker_processes", "load_driver",
                  "load_driver_hosts", "on_error", "telemetry", "telemetry_params", "telemetry_profile", "undefined_track_params")


def environment(info: TrialInfo, summary: Summary | None = None) -> dict[str, Any]:
    """Engine and version, car, nodes, machine, track, challenge, params, user tags -- redacted. The status says
    "complete, with errors (...)" when the summary has failed requests."""
    clusters = [{**{k: c.get(k) for k in ("name", "engine", "version", "nodes", "hosts", "car", "heap_max_bytes",
                                          "processors", "cpus", "instance_type")},
                 "distribution": distribution_text(c)} for c in info.clusters]
    stored = applying_options(info.options)  # trials stored before options were filtered, too
    options = {k: stored.get(k) for k in _SHOWN_OPTIONS if stored.get(k) not in (None, [], {}, "")}
    env = {
        "id": info.id, "short_id": info.id[:8], "status": status_label(info.status, summary), "error": info.error,
        "start_time": info.start_time.strftime("%Y-%m-%d %H:%M:%S UTC"),
        "end_time": info.end_time.strftime("%Y-%m-%d %H:%M:%S UTC") if info.end_time else None,
        "track": info.track, "challenge": info.challenge, "track_params": info.track_params,
        "car": "+".join(info.car) or "-", "pipeline": info.pipeline, "test_mode": info.test_mode,
        "clusters": clusters, "machine": info.machine, "user_tags": info.user_tags, "options": options,
        "bench_version": info.bench_version, "placement": where_text(info) if info.clusters else None,
    }
    return redact(env)


def trial_facts(info: TrialInfo, summary: Summary | None = None) -> dict[str, Any]:
    """A trial's facts as a machine reads them (``bench show --report-format=json``): what the environment table
    shows, with each cluster's stored facts in full and the placement line -- redacted."""
    env = environment(info, summary)
    env.pop("clusters")
    return redact({**env, "clusters": info.clusters, "placement": where_text(info),
                   "environment": dict(environment_rows(info, summary))})


def _fmt_dict(d: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in d.items()) or "-"


def _per_node(v: Any, fmt: Any) -> str:
    return fmt(v) if not isinstance(v, dict) else ", ".join(f"{n} {fmt(x)}" for n, x in v.items())


def _runtime_text(c: dict[str, Any]) -> str:
    """``, heap 512 MiB, 1 processor, CPU 0``: what the nodes reported and the CPU set they were pinned to."""
    out = ""
    if c.get("heap_max_bytes") is not None:
        out += ", heap " + _per_node(c["heap_max_bytes"], lambda b: f"{b / 2**20:,.0f} MiB")
    if c.get("processors") is not None:
        out += ", processors " + _per_node(c["processors"], str)
    sets = c.get("cpus")
    if isinstance(sets, dict) and sets:
        values = set(sets.values())
        out += f", pinned to CPU {next(iter(values))}" if len(values) == 1 else \
            ", pinned to " + ", ".join(f"{n} CPU {v}" for n, v in sets.items())
    return out


def environment_rows(info: TrialInfo, summary: Summary | None = None) -> list[tuple[str, str]]:
    """The environment as (label, text) pairs for a two-column table."""
    e = environment(info, summary)
    rows = [("Trial", f"{e['id']} ({e['status']})"), ("Started", e["start_time"])]
    for c in e["clusters"]:
        rows.append((f"Cluster {c['name']}", (f"{c.get('engine') or '?'} {c.get('version') or '?'}, "
                                             f"{c.get('nodes') or '?'} node(s)"
                                             + (f" ({c['instance_type']})" if c.get("instance_type") else "")
                                             + (f", car {c['car']}" if c.get("car") else "")
                                             + _runtime_text(c))))
        if c.get("distribution"):
            rows.append((f"Distribution {c['name']}", c["distribution"]))
    rows += [("Car", e["car"]), ("Pipeline", e["pipeline"] + (" (test mode)" if e["test_mode"] else "")),
             ("Track", f"{e['track']} / {e['challenge']}"), ("Track params", _fmt_dict(e["track_params"])),
             ("User tags", _fmt_dict(e["user_tags"]))]
    if (synthetic := corpora_text(info.corpora)) is not None:
        rows.append(("Corpora", synthetic))
    if e["options"]:
        rows.append(("Options", _fmt_dict(e["options"])))
    if e["placement"]:
        rows.append(("Placement", e["placement"]))
    m = e["machine"]
    if m:
        mem = m.get("memory_bytes")
        rows.append(("Load driver machine", (f"{m.get('hostname', '?')}: {m.get('cpu_count', '?')} CPUs "
                                            f"({m.get('cpu_model') or '?'}), "
                                            f"{(mem or 0) / 1024 ** 3:.0f} GiB, {m.get('os', '?')}")))
    if e["error"]:
        rows.append(("Error", e["error"]))
    return [(a, redact_text(str(b))) for a, b in rows]


def environment_table(sides: list[dict[str, Any]], compare: bool) -> dict[str, Any]:
    """One table, one column per trial: rows are the union of the trials' environment labels. ``common`` and
    ``per_trial`` (``environment_summary``) are what the default templates show."""
    cols = [_column(i, s["label"], t["short_id"], compare) for i, s in enumerate(sides) for t in s["trials"]]
    per_trial = [dict(t["rows"]) for s in sides for t in s["trials"]]
    labels = list(dict.fromkeys(label for s in sides for t in s["trials"] for label, _ in t["rows"]))
    return {"headers": ["", *cols], "rows": [[label, *[d.get(label, "") for d in per_trial]] for label in labels]}


def _column(i: int, label: str, short_id: str, compare: bool) -> str:
    if not compare:
        return short_id
    role = "Baseline" if i == 0 else "Candidate"
    return f"{role} {label}" if label == short_id else f"{role} {label} · {short_id}"


# Rows every trial has its own value of: shown as columns of the per-trial table, never highlighted.
_IDENTITY = ("Trial", "Started")


def environment_summary(sides: list[dict[str, Any]], compare: bool) -> dict[str, Any]:
    """The environment readable with many trials: ``common`` (label, value) holds what every trial shares,
    shown once; ``per_trial`` (headers, rows, changed: one flag per cell) has one row per trial with its side,
    id, start and only the facts that differ between trials -- a cell is flagged where it differs from the
    baseline's first trial. With one trial everything is common."""
    trials = [(i, s["label"], t) for i, s in enumerate(sides) for t in s["trials"]]
    if len(trials) == 1:
        return {"common": [list(r) for r in trials[0][2]["rows"]], "per_trial": None}
    facts = []
    for _, _, t in trials:
        d = {label: value for label, value in t["rows"] if label not in _IDENTITY}
        d["Status"] = t["status"]
        facts.append(d)
    labels = list(dict.fromkeys(label for d in facts for label in d))
    common = [[label, facts[0][label]] for label in labels
              if label in facts[0] and all(d.get(label) == facts[0][label] for d in facts)]
    shared = {label for label, _ in common}
    varying = [label for label in labels if label not in shared]
    headers = (["Side"] if compare else []) + ["Trial", "Started", *varying]
    rows, changed = [], []
    for (i, label, t), d in zip(trials, facts):
        side = [_column(i, label, t["short_id"], True).removesuffix(f" · {t['short_id']}")] if compare else []
        rows.append([*side, t["short_id"], t["start_time"], *[d.get(v, "–") for v in varying]])
        changed.append([False] * (len(side) + 2) + [d.get(v) != facts[0].get(v) for v in varying])
    return {"common": common, "per_trial": {"headers": headers, "rows": rows, "changed": changed}}


def side_context(side: Side) -> dict[str, Any]:
    return {"label": side.label, "selector": side.selector,
            "trials": [dict(environment(t.info, t.summary), rows=environment_rows(t.info, t.summary))
                       for t in side.trials]}


def _group(metric: str, task: str, section: str, tasks: set[str]) -> str:
    title = section_title(metric, section)
    if title is not None:
        return title
    if task and task in tasks:
        return f"Task {task}"
    return "Cluster totals"


def row_sections(summaries: list[Summary | None]) -> dict[tuple[str, str], str]:
    """(metric, task) -> the summary section that produced the row ("" for cluster and task rows)."""
    out: dict[tuple[str, str], str] = {}
    for s in summaries:
        if s is not None:
            for section, r in s.labelled_rows():
                out.setdefault((r.metric, r.task), section)
    return out


def _sections(keyed: list[tuple[str, str, list[str]]], headers: list[str], of: dict[tuple[str, str], str],
              tasks: list[str]) -> list[dict[str, Any]]:
    """Group rows (metric, task, cells) into ordered sections."""
    order = ["Cluster totals", *[f"Task {t}" for t in tasks], *[k.title for k in section_kinds()]]
    grouped: dict[str, list[list[str]]] = {name: [] for name in order}
    for metric, task, cells in keyed:
        grouped.setdefault(_group(metric, task, of.get((metric, task), ""), set(tasks)), []).append(cells)
    return [{"name": n, "headers": headers, "rows": rows} for n, rows in grouped.items() if rows]


def trial_context(info: TrialInfo, summary: Summary | None) -> dict[str, Any]:
    from bench.results.report import error_records, render_summary

    of = row_sections([summary])
    rows: list[tuple[str, str, list[str]]] = []
    tasks: list[str] = []
    if summary is not None:
        tasks = [t.task for t in summary.tasks]
        for r in summary.rows():
            rows.append((r.metric, r.task, [r.metric, r.task, *row_cells(r, format_value)]))
    side = Side(label=info.id[:8], selector=info.id, trials=[])
    env = dict(environment(info, summary), rows=environment_rows(info, summary))
    sides = [dict(side_context(side), trials=[env])]
    ctx = {
        "study_tables": [],  # an experiment's study tables, when the report has any
        "mode": "trial", "title": f"bench report: {info.track} / {info.challenge} ({info.id[:8]})",
        "generated": datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC"),
        "bench_version": bench.__version__,
        "trial": env,
        "sides": sides,
        "environment_table": environment_table(sides, compare=False),
        "environment_summary": environment_summary(sides, compare=False),
        "headline": trial_headline(summary),
        "sections": _sections(rows, ["Metric", "Task", "Value", "Unit"], of, tasks)
                    + [t.model_dump() for t in section_tables(summary.sections if summary else {})],
        "summary_markdown": render_summary(summary, "markdown") if summary is not None else "",
        "notes": [redact_text(n) for n in (summary.notes if summary else [])],
        "errors": error_records(summary) if summary is not None else [],
    }
    return ctx


def compare_context(cmp: Comparison) -> dict[str, Any]:
    from bench.compare.render import render_comparison

    summaries = [t.summary for s in (cmp.baseline, *cmp.candidates) for t in s.trials]
    of = row_sections(summaries)
    tasks = list(dict.fromkeys(ts.task for s in summaries if s is not None for ts in s.tasks))
    keyed = [(r.metric, r.task, cells) for r, cells in zip(cmp.rows, table_rows(cmp))]
    labels = " vs ".join([cmp.baseline.label, *[c.label for c in cmp.candidates]])
    track = cmp.baseline.trials[0].info if cmp.baseline.trials else None
    verdicts = [(r, c) for r in cmp.rows for c in r.candidates]
    sides = [side_context(cmp.baseline), *[side_context(c) for c in cmp.candidates]]
    return {
        "study_tables": [],  # an experiment's study tables, when the report has any
        "mode": "compare",
        "title": f"bench comparison: {labels}" + (f" ({track.track} / {track.challenge})" if track else ""),
        "generated": datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC"),
        "bench_version": bench.__version__,
        "sides": sides,
        "environment_table": environment_table(sides, compare=True),
        "environment_summary": environment_summary(sides, compare=True),
        "headline": compare_headline_view(cmp),
        "comparison": to_json(cmp),
        "headers": table_headers(cmp),
        "sections": _sections(keyed, table_headers(cmp), of, tasks)
                    + [t.model_dump() for s in (cmp.baseline, *cmp.candidates) for tr in s.trials if tr.summary
                       for t in section_tables(tr.summary.sections, f"{s.label} · {tr.info.id[:8]}: ")],
        "comparison_markdown": render_comparison(cmp, "markdown"),
        "comparison_header": side_lines(cmp),
        "counts": {v: sum(1 for _, c in verdicts if c.verdict == v)
                   for v in ("improvement", "regression", "within noise", "not judged")},
        "notes": [redact_text(w) for w in cmp.warnings],
        "only_in": cmp.only_in,
    }
