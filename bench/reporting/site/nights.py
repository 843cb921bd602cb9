"""The nights of an experiment as the site needs them: every run (a night) with, per track entry, its study table
(bench/reporting/study.py, from the complete trials of each variant), what each variant ran on (the filters) and
why a variant has no value that night (its failed trials' errors). A trial that cannot be read (its row, its
summary or its samples damaged) leaves its night marked, not the site unbuilt: it is left out of the night's
numbers and named, with what is wrong, on the night's page. Trials are read once per build; summaries of
finished trials come from a cache the caller keeps between builds (a finished trial never changes)."""

from __future__ import annotations

from datetime import UTC, datetime

from pydantic import BaseModel

from bench.compare.core import Side, TrialData
from bench.race.experiment import TAG_REPETITION, TAG_RUN, TAG_TRACK, TAG_VARIANT, ExperimentFile
from bench.reporting.study import StudyTable, study_table
from bench.results.summary import Summary
from bench.trials.model import DamagedTrial, TrialInfo, TrialReader
from bench.trials.races import one_per_race
from bench.trials.summary import stored_summary
from bench.util.errors import StoreError

FINISHED = ("complete", "failed", "aborted", "interrupted", "aborted-by-threshold")


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
    damaged: list[str] = []  # "trial ID: what is wrong", for trials left out because they cannot be read
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


def _track_index(tags: dict[str, str]) -> int:
    value = tags.get(TAG_TRACK, "0") or "0"
    return int(value) if value.isdigit() else 0


def _readable(store: TrialReader, cache: SummaryCache, night: Night,
              trials: list[TrialInfo]) -> tuple[list[TrialData], list[str], list[str]]:
    """A variant's trials of a night that count (complete, readable, one per race), why the others do not, and
    the notes of races stored more than once. A trial that cannot be read is named on the night."""
    why = [f"{t.status}: {t.error or 'no error stored'}" for t in trials if t.status != "complete"]
    complete, notes = one_per_race([t for t in trials if t.status == "complete"])
    done: list[TrialData] = []
    for t in complete:
        try:
            summary = cache.get(store, t)
        except StoreError as e:
            text = str(e)
            night.damaged.append(text if text.startswith(f"trial {t.id}") else f"trial {t.id}: {text}")
            why.append(f"trial {t.id[:12]} cannot be read")
            continue
        if summary is None:
            night.damaged.append(f"trial {t.id}: complete, but neither a summary nor samples are stored")
            why.append(f"trial {t.id[:12]} has nothing stored")
            continue
        done.append(TrialData(info=t, summary=summary))
    return done, why, notes


def experiment_nights(store: TrialReader, exp: ExperimentFile, trials: list[TrialInfo],
                      cache: SummaryCache, damaged: list[DamagedTrial] | None = None) -> list[Night]:
    """Every night of ``exp`` (oldest first), one per run and track entry. ``trials``: the experiment's trials;
    ``damaged``: its trials whose row cannot be read (each marks its night; one without a readable start time
    marks the night of its run's other trials, or a night of its own dated by nothing else it has)."""
    assert exp.study is not None and exp.baseline is not None
    runs: dict[str, list[TrialInfo]] = {}
    for t in trials:
        runs.setdefault(t.user_tags.get(TAG_RUN, "?"), []).append(t)
    broken: dict[str, list[DamagedTrial]] = {}
    for d in damaged or []:
        broken.setdefault(d.user_tags.get(TAG_RUN, "?"), []).append(d)
    variants = [exp.baseline, *[v for v in exp.variants if v != exp.baseline]]
    nights: list[Night] = []

    def run_date(run_id: str) -> datetime:
        dates = [t.start_time for t in runs.get(run_id, [])] + \
                [d.start_time for d in broken.get(run_id, []) if d.start_time is not None]
        return min(dates) if dates else datetime.min.replace(tzinfo=UTC)

    for run_id in sorted({*runs, *broken}, key=run_date):
        run, date = runs.get(run_id, []), run_date(run_id)
        for ti, entry in enumerate(exp.track_entries()):
            mine = sorted((t for t in run if _track_index(t.user_tags) == ti), key=lambda t: t.start_time)
            night = Night(experiment=exp.name, run_id=run_id, date=date, track_index=ti,
                          track_label=entry.label or (mine[0].track if mine else ""), trials=[_line(t) for t in mine])
            night.damaged = [f"trial {d.id}: {d.problem}" for d in broken.get(run_id, [])
                             if _track_index(d.user_tags) == ti]
            sides: list[Side] = []
            repeated: list[str] = []
            for v in variants:
                of_v = [t for t in mine if t.user_tags.get(TAG_VARIANT) == v]
                done, why, notes = _readable(store, cache, night, of_v)
                repeated += notes
                why += [f"trial {d.id[:12]} cannot be read" for d in broken.get(run_id, [])
                        if d.user_tags.get(TAG_VARIANT) == v and _track_index(d.user_tags) == ti]
                if done:
                    sides.append(Side(label=v, selector=f"tag:{TAG_RUN}={run_id},{TAG_VARIANT}={v}", trials=done))
                else:
                    night.errors[v] = why or ["no race of this variant was stored this night"]
            if sides:
                night.table = study_table(exp.name, run_id, exp.study, sides)
                night.table.notes += repeated
            nights.append(night)
    return nights
