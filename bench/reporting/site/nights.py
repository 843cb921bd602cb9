"""The nights of an experiment as the site needs them: every run (a night) with, per track entry, its study table
(bench/reporting/study.py, from the complete trials of each variant), what each variant ran on (the filters) and
why a variant has no value that night (its failed trials' errors). Trials are read once per build; summaries of
finished trials come from a cache the caller keeps between builds (a finished trial never changes)."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel

from bench.compare.core import Side, TrialData
from bench.race.experiment import TAG_REPETITION, TAG_RUN, TAG_TRACK, TAG_VARIANT, ExperimentFile
from bench.reporting.study import StudyTable, study_table
from bench.results.summary import Summary
from bench.trials.model import TrialInfo, TrialReader
from bench.trials.races import one_per_race
from bench.trials.summary import stored_summary

FINISHED = ("complete", "failed", "aborted", "interrupted")


class TrialLine(BaseModel):
    """One race of a night, as the night's page lists it."""

    id: str
    variant: str
    repetition: str
    track_index: int
    status: str
    error: str | None = None
    start: datetime
    track: str
    challenge: str
    engine: str = ""
    version: str = ""
    car: str = ""


class Night(BaseModel):
    experiment: str
    run_id: str
    date: datetime  # the run's first trial's start
    track_index: int
    track_label: str
    table: StudyTable | None = None  # None: no variant completed
    errors: dict[str, list[str]] = {}  # variant -> why it has no value (its failed trials)
    trials: list[TrialLine] = []


def _line(t: TrialInfo) -> TrialLine:
    cluster = t.clusters[0] if t.clusters else {}
    return TrialLine(id=t.id, variant=t.user_tags.get(TAG_VARIANT, ""), repetition=t.user_tags.get(TAG_REPETITION, ""),
                     track_index=int(t.user_tags.get(TAG_TRACK, "0") or 0), status=t.status, error=t.error,
                     start=t.start_time, track=t.track, challenge=t.challenge, engine=str(cluster.get("engine") or ""),
                     version=str(cluster.get("version") or ""), car="+".join(t.car) or "external")


class SummaryCache:
    """trial id -> its summary (JSON) for finished trials: what an incremental build need not read again."""

    def __init__(self, stored: dict[str, str] | None = None) -> None:
        self.stored: dict[str, str] = dict(stored or {})
        self.read = 0  # summaries read from the store in this build

    def get(self, store: TrialReader, t: TrialInfo) -> Summary | None:
        if t.id in self.stored:
            return Summary.model_validate_json(self.stored[t.id]) if self.stored[t.id] else None
        self.read += 1
        summary = stored_summary(store, t.id)
        if t.status in FINISHED:
            self.stored[t.id] = summary.model_dump_json() if summary is not None else ""
        return summary


def experiment_nights(store: TrialReader, exp: ExperimentFile, trials: list[TrialInfo],
                      cache: SummaryCache) -> list[Night]:
    """Every night of ``exp`` (oldest first), one per run and track entry. ``trials``: the experiment's trials."""
    assert exp.study is not None and exp.baseline is not None
    runs: dict[str, list[TrialInfo]] = {}
    for t in trials:
        runs.setdefault(t.user_tags.get(TAG_RUN, "?"), []).append(t)
    variants = [exp.baseline, *[v for v in exp.variants if v != exp.baseline]]
    nights: list[Night] = []
    for run_id, run in sorted(runs.items(), key=lambda kv: min(t.start_time for t in kv[1])):
        date = min(t.start_time for t in run)
        for ti, entry in enumerate(exp.track_entries()):
            mine = sorted((t for t in run if int(t.user_tags.get(TAG_TRACK, "0") or 0) == ti),
                          key=lambda t: t.start_time)
            night = Night(experiment=exp.name, run_id=run_id, date=date, track_index=ti,
                          track_label=entry.label or (mine[0].track if mine else ""), trials=[_line(t) for t in mine])
            sides: list[Side] = []
            repeated: list[str] = []
            for v in variants:
                of_v = [t for t in mine if t.user_tags.get(TAG_VARIANT) == v]
                complete, notes = one_per_race([t for t in of_v if t.status == "complete"])
                repeated += notes
                done = [TrialData(info=t, summary=cache.get(store, t)) for t in complete]
                if done:
                    sides.append(Side(label=v, selector=f"tag:{TAG_RUN}={run_id},{TAG_VARIANT}={v}", trials=done))
                else:
                    night.errors[v] = [f"{t.status}: {t.error or 'no error stored'}" for t in of_v] or \
                                      ["no race of this variant was stored this night"]
            if sides:
                night.table = study_table(exp.name, run_id, exp.study, sides)
                night.table.notes += repeated
            nights.append(night)
    return nights
