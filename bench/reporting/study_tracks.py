"""One study table for an experiment over several tracks: each key row once per track (``<track>: <row>``), the
tracks of a row next to each other, so a reader sees e.g. CCR's cost on geopoint, http_logs and pmc in one table.

Each track's rows are its own study (bench/reporting/study.py: the track's trials only, compare's verdicts); this
module only lines them up. A track whose variants differ from the first track's (e.g. a variant whose races on it
all failed) adds no rows, and a note says so.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bench.reporting.study import StudyRow, StudyTable, load_study_table
from bench.util.errors import BenchError

if TYPE_CHECKING:
    from bench.compare.stats import CiMethod
    from bench.race.experiment import ExperimentFile
    from bench.trials.model import TrialReader


def merge_track_tables(tables: list[tuple[str, StudyTable]]) -> StudyTable:
    """Pure: the tables of one run's tracks (track label, table), first track first, as one table."""
    first = tables[0][1]
    usable = [(track, t) for track, t in tables if t.variants == first.variants]
    notes: list[str] = []
    for track, t in tables:
        if t.variants != first.variants:
            notes.append(f"{track}: no rows here: its variants {t.variants} are not {first.variants} "
                         "(see its own report)")
    trials = {track: t.trials for track, t in usable}
    if len({tuple(n) for n in trials.values()}) > 1:
        notes.append("Trials per variant differ by track: " + "; ".join(
            f"{track}: " + ", ".join(f"{v} {n}" for v, n in zip(first.variants, counts))
            for track, counts in trials.items()))
    order: list[str] = []
    for _track, t in usable:
        order += [r.label for r in t.rows if r.label not in order]
    rows: list[StudyRow] = []
    for label in order:
        for track, t in usable:
            rows += [r.model_copy(update={"label": f"{track}: {r.label}"}) for r in t.rows if r.label == label]
    lead = [f"{track}: {line}" for track, t in usable for line in t.lead]
    after = [f"{track}: {line}" for track, t in usable for line in t.after]
    for _track, t in usable:
        notes += [n for n in t.notes if n not in notes]
    return StudyTable(experiment=first.experiment, run_id=first.run_id, variants=first.variants,
                      trials=[max(n[i] for n in trials.values()) for i in range(len(first.variants))],
                      rows=rows, lead=lead, notes=notes, after=after)


def track_labels(exp: ExperimentFile) -> list[str]:
    """A name per track entry (track[/challenge]; the entry's number where two would read alike)."""
    labels = [e.label or f"track {i}" for i, e in enumerate(exp.track_entries())]
    return [lab if labels.count(lab) == 1 else f"{lab} #{i}" for i, lab in enumerate(labels)]


def tracks_study_table(store: TrialReader, exp: ExperimentFile, run_id: str, *,
                       ci_method: CiMethod = "auto") -> StudyTable:
    """The study table of a stored run: one track's own table, or every track's rows in one table."""
    labels = track_labels(exp)
    if len(labels) == 1:
        return load_study_table(store, exp, run_id, 0, ci_method=ci_method)
    tables, missing = [], []
    for i, label in enumerate(labels):
        try:
            tables.append((label, load_study_table(store, exp, run_id, i, ci_method=ci_method)))
        except BenchError as e:  # e.g. a variant whose races on this track all failed: the others still count
            missing.append(f"{label}: no rows: {e}")
    if not tables:
        raise BenchError(f"experiment {exp.name} run {run_id}: no track has a study table ({'; '.join(missing)})")
    table = merge_track_tables(tables)
    table.notes += missing
    return table
