"""An experiment's races as stored trials: the user tags naming the planned race each trial ran, and which trial
counts when one planned race was stored more than once.

A planned race (experiment, run, variant, repetition, track entry) runs once per run; ``bench experiment`` holds
a lock per run so that two resumes cannot both run it. A store written before that lock may still hold a race
twice: a study that took both would be judged on n + 1 repetitions, so readers keep one and say so.
"""

from __future__ import annotations

from bench.trials.model import TrialInfo

TAG_EXPERIMENT = "experiment"
TAG_RUN = "experiment-run"
TAG_VARIANT = "variant"
TAG_REPETITION = "repetition"
TAG_TRACK = "experiment-track"
RACE_TAGS = (TAG_EXPERIMENT, TAG_RUN, TAG_VARIANT, TAG_REPETITION, TAG_TRACK)
REPEATED_RACE = "Stored more than once:"  # how the notes of one_per_race start


def planned_race(t: TrialInfo) -> tuple[str, ...] | None:
    """The planned race a trial ran, by its tags; None for a trial of no experiment run."""
    if TAG_RUN not in t.user_tags or TAG_REPETITION not in t.user_tags:
        return None
    return tuple(t.user_tags.get(k, "") for k in RACE_TAGS)


def one_per_race(trials: list[TrialInfo]) -> tuple[list[TrialInfo], list[str]]:
    """``trials`` (the complete ones of a selection) with one trial per planned race: the latest to complete
    (by end time, then start), in their given order; and a note for each race stored more than once. Pure."""
    groups: dict[tuple[str, ...], list[TrialInfo]] = {}
    for t in trials:
        key = planned_race(t)
        if key is not None:
            groups.setdefault(key, []).append(t)
    dropped: set[str] = set()
    notes = []
    for (_exp, run, variant, rep, _track), group in groups.items():
        if len(group) < 2:
            continue
        kept = max(group, key=lambda t: (t.end_time or t.start_time, t.start_time, t.id))
        dropped.update(t.id for t in group if t is not kept)
        others = ", ".join(t.id[:8] for t in group if t is not kept)
        notes.append(f"{REPEATED_RACE} variant {variant} repetition {rep} of run {run} ({len(group)} trials, races "
                     f"run at once): only the latest to complete, trial {kept.id[:8]}, counts; left out: {others}.")
    return [t for t in trials if t.id not in dropped], notes
