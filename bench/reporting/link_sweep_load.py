"""The link sweep of a stored experiment run (``bench.reporting.link_sweep``): every planned race's trial, a failed
one as what it is, with the link its clusters raced over (the trial's facts) and its study values."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bench.reporting.link_sweep import LinkSweepRow, LinkSweepTable, LinkSweepTrial, trial_values
from bench.reporting.placement import trial_links
from bench.reporting.study import trial_study_values
from bench.reporting.sweep_load import _per_race
from bench.trials.races import TAG_TRACK, TAG_VARIANT
from bench.trials.summary import stored_summary

if TYPE_CHECKING:
    from bench.race.experiment import ExperimentFile
    from bench.trials.model import TrialInfo, TrialReader


def sweep_trial(store: TrialReader, exp: ExperimentFile, variant: str, t: TrialInfo) -> LinkSweepTrial:
    links = trial_links(t)
    link = links[0] if links else None  # a sweep varies one link
    measured = link.get("measured") if link else None
    base = LinkSweepTrial(trial_id=t.id, rtt_ms=float(link.get("rtt_ms") or 0.0) if link else 0.0,
                          link=f"{link.get('from')}->{link.get('to')} ({link.get('kind')})" if link else "no link",
                          measured_rtt_ms=measured.get("added_rtt_ms") if isinstance(measured, dict) else None)
    if t.status != "complete":
        return base.model_copy(update={"problem": f"race {t.status}: {t.error or 'no error stored'}"})
    summary = stored_summary(store, t.id)
    if summary is None:
        return base.model_copy(update={"problem": "no summary stored"})
    assert exp.study is not None
    return base.model_copy(update=trial_values(trial_study_values(summary, variant, exp.study)))


def load_link_sweep(store: TrialReader, exp: ExperimentFile, run_id: str, track_index: int = 0) -> LinkSweepTable:
    from bench.race.experiment import runs_of

    trials = [t for t in runs_of(store, exp.name).get(run_id, [])
              if t.user_tags.get(TAG_TRACK, "0") == str(track_index)]
    rows = [LinkSweepRow(variant=v, trials=[sweep_trial(store, exp, v, t) for t in
                                            _per_race([t for t in trials if t.user_tags.get(TAG_VARIANT) == v])])
            for v in exp.variants]
    return LinkSweepTable(experiment=exp.name, run_id=run_id, rows=rows)
