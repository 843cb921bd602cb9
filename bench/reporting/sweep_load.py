"""The follower settings sweep of a stored experiment run (``bench.reporting.sweep``): every planned race's trial,
the failed ones too (a race that failed is a verdict of its own, never left out), one per race."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bench.reporting.sweep import SweepRow, SweepTable, settings_text, trial_verdict
from bench.trials.races import TAG_REPETITION, TAG_TRACK, TAG_VARIANT, one_per_race
from bench.trials.summary import stored_summary

if TYPE_CHECKING:
    from bench.race.experiment import ExperimentFile
    from bench.trials.model import TrialInfo, TrialReader


def failed_wait_seconds(store: TrialReader, trial_id: str, task: str | None) -> float | None:
    """How long the trial's longest failed sync wait ran (its stored request's service time), if it had one."""
    df = store.samples(trial_id)
    if df.empty or "success" not in df.columns:
        return None
    name = df["task"] == task if task else df["operation_type"] == "wait-for-followers-to-sync"
    failed = df[name & ~df["success"].astype(bool)]
    return float(failed["service_time"].max()) if not failed.empty else None


def _per_race(trials: list[TrialInfo]) -> list[TrialInfo]:
    """One trial per planned race: the complete one that counts, else the latest attempt (failed or not)."""
    complete, _notes = one_per_race([t for t in trials if t.status == "complete"])
    done = {(t.user_tags.get(TAG_VARIANT), t.user_tags.get(TAG_REPETITION)) for t in complete}
    rest: dict[tuple[str | None, str | None], TrialInfo] = {}
    for t in sorted((t for t in trials if t.status != "complete"), key=lambda t: t.start_time):
        key = (t.user_tags.get(TAG_VARIANT), t.user_tags.get(TAG_REPETITION))
        if key not in done:
            rest[key] = t
    return sorted([*complete, *rest.values()], key=lambda t: int(t.user_tags.get(TAG_REPETITION, "0") or 0))


def load_sweep_table(store: TrialReader, exp: ExperimentFile, run_id: str, track_index: int = 0) -> SweepTable:
    from bench.race.experiment import runs_of

    assert exp.study is not None and exp.study.catch_up_within is not None
    within, sync_task = exp.study.catch_up_within, exp.study.sync_task
    trials = [t for t in runs_of(store, exp.name).get(run_id, [])
              if t.user_tags.get(TAG_TRACK, "0") == str(track_index)]
    rows = []
    for variant in exp.variants:
        mine = _per_race([t for t in trials if t.user_tags.get(TAG_VARIANT) == variant])
        verdicts = []
        for t in mine:
            summary = stored_summary(store, t.id) if t.status == "complete" else None
            waited = failed_wait_seconds(store, t.id, sync_task) if summary is not None else None
            verdicts.append(trial_verdict(t.id, t.status, t.error, summary, waited, within, sync_task))
        params = mine[-1].track_params if mine else exp.variants[variant].get("track-params", {})
        cars = mine[-1].car if mine else []
        rows.append(SweepRow(variant=variant, settings=settings_text(params or {}, cars), trials=verdicts))
    return SweepTable(experiment=exp.name, run_id=run_id, within=within, rows=rows)
