"""Baseline against one or more candidates: pure functions from trials (info + summary) to a Comparison.

A side is one trial or a group of trials of one configuration. Its value for a row is the mean over the
trials that have the row; the difference is judged with a confidence interval when both sides have at
least ``MIN_GROUP`` trials (see ``bench.compare.stats``), otherwise it is shown but not judged.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from bench.compare.metrics import RowKey, higher_is_better, trial_values
from bench.compare.mismatch import mismatch_warnings
from bench.compare.model import Side, TrialData  # noqa: F401 - re-exported: compare callers build these
from bench.compare.roles import RoleMapping, role_mapping
from bench.compare.stats import MIN_GROUP, CiMethod, DiffCI, Verdict, diff_ci, judge
from bench.results.summary import messages_text


class CandidateCell(BaseModel):
    value: float | None = None  # mean over the side's trials that have the row
    values: list[float] = []  # one per trial having the row
    diff: float | None = None  # candidate − baseline
    diff_pct: float | None = None  # 100 * diff / |baseline|
    ci: DiffCI | None = None
    ci_pct: tuple[float, float] | None = None  # the CI as % of the baseline
    verdict: Verdict = "n/a"


class CompareRow(BaseModel):
    metric: str
    task: str
    unit: str
    higher_is_better: bool | None
    baseline: float | None
    baseline_values: list[float] = []
    candidates: list[CandidateCell]
    # Failed requests of this row's task over every compared trial: a change in such a row may be the errors'.
    task_failed: int = 0
    # Side label -> that side's own scope of this row, for sides whose cluster was compared under another
    # role (``bench.compare.roles``): the baseline's ``default/default-0`` shown as ``leader/leader-0``.
    mapped_from: dict[str, str] = {}
    # Side label -> why that side's value is partial (incomplete telemetry, ``MetricRow.partial``): not judged.
    partial: dict[str, str] = {}

    @property
    def scope(self) -> str:
        """The Task column as shown: the row's scope, where a side's scope was mapped that side's own, and the
        sides whose value is partial."""
        text = scope_text(self.task, self.mapped_from)
        return f"{text} [partial: {', '.join(self.partial)}]" if self.partial else text


def scope_text(task: str, mapped_from: dict[str, str]) -> str:
    if not mapped_from:
        return task
    return f"{task} (" + ", ".join(f"{label}: {own}" for label, own in mapped_from.items()) + ")"


class Comparison(BaseModel):
    baseline: Side
    candidates: list[Side]
    rows: list[CompareRow]
    only_in: list[dict[str, Any]] = []  # rows present on some sides only: metric, task, sides
    warnings: list[str] = []
    noise_threshold_pct: float = 0.0
    ci_method: str = "auto"
    confidence: float = 0.95

    @property
    def judged(self) -> bool:
        return any(c.ci is not None for r in self.rows for c in r.candidates)


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _side_values(side: Side, roles: RoleMapping | None = None
                 ) -> tuple[list[RowKey], dict[RowKey, list[float]], dict[RowKey, str], dict[RowKey, str]]:
    """Row order, values and units of a side, and for rows whose scope ``roles`` mapped, the side's own."""
    order: list[RowKey] = []
    values: dict[RowKey, list[float]] = {}
    units: dict[RowKey, str] = {}
    own: dict[RowKey, str] = {}
    for t in side.trials:
        scope = roles.scope if roles is not None and t.info.id in roles.trials else None
        if scope is not None and t.summary is not None:
            for section, r in t.summary.labelled_rows():
                if section and scope(r.task) != r.task:
                    own.setdefault((r.metric, scope(r.task)), r.task)
        for key, (v, unit) in trial_values(t.summary, scope).items():
            if key not in values:
                order.append(key)
                values[key] = []
                units[key] = unit
            if math.isfinite(v):
                values[key].append(v)
    return order, values, units, own


def _partial_rows(side: Side, roles: RoleMapping | None) -> dict[RowKey, str]:
    """The side's rows that some trial reported as partial, with the first reason."""
    out: dict[RowKey, str] = {}
    for t in side.trials:
        if t.summary is None:
            continue
        scope = roles.scope if roles is not None and t.info.id in roles.trials else None
        for _section, r in t.summary.labelled_rows():
            if r.partial is not None:
                out.setdefault((r.metric, scope(r.task) if scope is not None else r.task), r.partial)
    return out


def _cell(base: list[float], cand: list[float], higher: bool | None, *, threshold: float, method: CiMethod,
          confidence: float, seed: int) -> CandidateCell:
    b, c = _mean(base), _mean(cand)
    cell = CandidateCell(value=c, values=cand)
    if b is None or c is None:
        return cell
    cell.diff = c - b
    cell.diff_pct = (100.0 * cell.diff / abs(b)) if b != 0 else (0.0 if cell.diff == 0 else None)
    if len(base) >= MIN_GROUP and len(cand) >= MIN_GROUP:
        cell.ci = diff_ci(base, cand, method=method, confidence=confidence, seed=seed)
        if b != 0:
            cell.ci_pct = (100.0 * cell.ci.low / abs(b), 100.0 * cell.ci.high / abs(b))
    cell.verdict = judge(cell.diff_pct, cell.ci, higher, threshold)
    return cell


def _failed_by_task(sides: list[Side]) -> dict[str, int]:
    """Failed requests (warmup included) per task over every trial of the sides."""
    out: dict[str, int] = {}
    for s in sides:
        for t in s.trials:
            for ts in (t.summary.tasks if t.summary is not None else []):
                n = ts.failed_requests + ts.warmup_failed_requests
                if n:
                    out[ts.task] = out.get(ts.task, 0) + n
    return out


def _error_warning(side: Side) -> str | None:
    parts = []
    for t in side.trials:
        for ts in (t.summary.tasks if t.summary is not None else []):
            n = ts.failed_requests + ts.warmup_failed_requests
            if n:
                parts.append(f"{t.info.id[:8]} task '{ts.task}': {n} of {ts.requests + ts.warmup_requests} "
                             "requests failed" + (" (all: no throughput or latency)" if ts.throughput is None
                                                  and not ts.latency and ts.requests else "")
                             + (f" [{messages_text(ts.error_messages)}]" if ts.error_messages else ""))
    if not parts:
        return None
    return (f"{side.label}: complete, with errors -- " + "; ".join(parts)
            + ". Rows of these tasks are marked 'task had errors': their changes may come from the errors.")


def _describe(side: Side) -> str:
    tracks = sorted({f"{t.info.track}/{t.info.challenge}" for t in side.trials})
    return ", ".join(tracks)


def compare(baseline: Side, candidates: list[Side], *, noise_threshold_pct: float = 0.0,
            ci_method: CiMethod = "auto", confidence: float = 0.95, seed: int = 0,
            notes: list[str] | None = None, planned: frozenset[str] = frozenset()) -> Comparison:
    """Compare every candidate with the baseline, row by row (rows in the baseline's report order, then
    rows only the candidates have). ``planned``: what the sides differ in by design (``PLANNED_ASPECTS``, e.g.
    an experiment's variants): no warning for it unless the trials of one side differ in it too."""
    if noise_threshold_pct < 0:
        raise ValueError("noise threshold must be ≥ 0")
    sides = [baseline, *candidates]
    roles = role_mapping(sides)
    per_side = [_side_values(s, roles) for s in sides]
    partial_by_side = [_partial_rows(s, roles) for s in sides]
    warnings = _trial_warnings(sides, roles, list(notes or []), planned)
    partial_keys = {k for p in partial_by_side for k in p}
    if partial_keys:
        warnings.append("Partial rows (computed from incomplete telemetry; a maximum is a lower bound) are shown, "
                        "not judged: " + "; ".join(
                            f"{s.label}: {k[0]} of {k[1]} ({p[k]})" for s, p in zip(sides, partial_by_side)
                            for k in p) + ".")
    rows, only_in = _rows(sides, per_side, partial_by_side, _Judge(noise_threshold_pct, ci_method, confidence, seed))
    return Comparison(baseline=baseline, candidates=candidates, rows=rows, only_in=only_in,
                      warnings=_mismatches(sides, planned) + warnings,
                      noise_threshold_pct=noise_threshold_pct, ci_method=ci_method, confidence=confidence)


def _mismatches(sides: list[Side], planned: frozenset[str]) -> list[str]:
    """What differs between the trials besides what is being compared: said first, before anything else."""
    mismatches: list[str] = []
    described = [_describe(s) for s in sides]
    mixed = any("," in d for d in described)  # within a side: never by design
    if mixed or (len(set(described)) > 1 and "tracks" not in planned):
        mismatches.append("Trials of different tracks or challenges are compared: "
                          + "; ".join(f"{s.label}: {d}" for s, d in zip(sides, described)) + ".")
    return mismatches + mismatch_warnings(sides, planned)


def _trial_warnings(sides: list[Side], roles: Any, warnings: list[str], planned: frozenset[str]) -> list[str]:
    """What the reader must know of the trials themselves: roles mapped, trials incomplete, running, without
    samples or too few to judge, errors, differing metrics or throughput rules."""
    if roles is not None and "roles" not in planned:
        warnings.append(roles.note([s.label for s in sides if any(t.info.id in roles.trials for t in s.trials)]))
    bad = {s.label: [t.info.id[:8] for t in s.trials if t.info.status not in ("complete", "running")] for s in sides}
    running = {s.label: [t.info.id[:8] for t in s.trials if t.info.status == "running"] for s in sides}
    missing = {s.label: [t.info.id[:8] for t in s.trials if t.summary is None] for s in sides}
    small = {s.label: len(s.trials) for s in sides if 1 < len(s.trials) < MIN_GROUP}
    # One line per kind, naming every side it concerns (a study of four variants would repeat it four times).
    for ids_by_side, text in ((bad, " did not complete; their numbers are partial."),
                              (running, " are still running; their numbers are partial."),
                              (missing, " have no stored samples or summary.")):
        if any(ids_by_side.values()):
            warnings.append("; ".join(f"{label}: trial(s) {', '.join(ids)}" for label, ids in ids_by_side.items()
                                      if ids) + text)
    if small:
        sizes = sorted(set(small.values()))
        warnings.append(f"{', '.join(small)} {'has' if len(small) == 1 else 'have'} "
                        + (f"{sizes[0]} trials" if len(sizes) == 1 else
                           "fewer trials (" + ", ".join(f"{k}: {n}" for k, n in small.items()) + ")")
                        + f": at least {MIN_GROUP} per side are needed to judge significance.")
    for s in sides:
        errors = _error_warning(s)
        if errors:
            warnings.insert(0, errors)  # first after the mismatches: the next thing a reader sees
        if any(t.summary is not None for t in s.trials):
            counts = {len(trial_values(t.summary)) for t in s.trials if t.summary is not None}
            if len(counts) > 1:
                warnings.append(f"{s.label}: its trials do not all report the same metrics; each value is the "
                                "mean of the trials that have it.")
    rules = {ts.throughput.rule for s in sides for t in s.trials if t.summary is not None
             for ts in t.summary.tasks if ts.throughput is not None}
    if len(rules) > 1:
        warnings.append("Min/Mean/Median/Max Throughput were computed by different rules in these trials: some "
                        "were stored without their samples and keep an older bench version's figures, the others "
                        "are Rally's running mean; their throughput rows do not compare.")
    if all(len(s.trials) == 1 for s in sides):
        warnings.append("Single trials: significance cannot be judged (run ≥ 3 trials per side and compare "
                        "groups, e.g. --baseline tag:variant=a --candidate tag:variant=b).")
    return warnings


@dataclass(frozen=True)
class _Judge:
    """How a candidate's values are judged against the baseline's."""

    threshold: float
    method: CiMethod
    confidence: float
    seed: int


def _rows(sides: list[Side], per_side: list[Any], partial_by_side: list[dict[RowKey, str]],
          judge: _Judge) -> tuple[list[CompareRow], list[dict[str, Any]]]:
    """The compared rows, and the rows only some sides have."""
    failed_by_task = _failed_by_task(sides)
    keys: list[RowKey] = list(dict.fromkeys(k for order, _, _, _ in per_side for k in order))
    rows: list[CompareRow] = []
    only_in: list[dict[str, Any]] = []
    for key in keys:
        present = [s.label for s, (_, vals, _, _) in zip(sides, per_side) if vals.get(key)]
        mapped_from = {s.label: own[key] for s, (_, vals, _, own) in zip(sides, per_side)
                       if key in own and vals.get(key)}
        if len(present) < len(sides):
            entry: dict[str, Any] = {"metric": key[0], "task": scope_text(key[1], mapped_from), "sides": present}
            if mapped_from:
                entry["mapped_from"] = mapped_from
            if key[1] and failed_by_task.get(key[1]):
                entry["task_failed"] = failed_by_task[key[1]]
            only_in.append(entry)
            if key not in per_side[0][1] or not per_side[0][1][key]:
                continue  # nothing to compare against
            if len(present) == 1:
                continue  # baseline only
        base = per_side[0][1][key]
        higher = higher_is_better(key[0])
        partial = {s.label: p[key] for s, p in zip(sides, partial_by_side) if key in p}
        cells = []
        for (_, vals, _units, _own) in per_side[1:]:
            cell = _cell(base, vals.get(key, []), higher, threshold=judge.threshold, method=judge.method,
                         confidence=judge.confidence, seed=judge.seed)
            if partial:
                cell.verdict = "not judged"  # a lower bound against a value (or another bound) says nothing
            cells.append(cell)
        rows.append(CompareRow(metric=key[0], task=key[1], unit=per_side[0][2][key], higher_is_better=higher,
                               baseline=_mean(base), baseline_values=base, candidates=cells,
                               task_failed=failed_by_task.get(key[1], 0) if key[1] else 0,
                               mapped_from=mapped_from, partial=partial))
    return rows, only_in
