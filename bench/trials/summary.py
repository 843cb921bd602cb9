"""The summary of a stored trial: its samples summarised, plus the sections extensions add from what the trial
stored (summary enrichers).

An extension registers an enricher for its section from its ``setup()`` (telemetry adds its section from the
trial's telemetry rows); the store, ``bench compare`` and the race call ``enrich``/``stored_summary`` without
knowing which extensions exist.
"""

from __future__ import annotations

from collections.abc import Callable

from bench import extensions
from bench.results.stats import THROUGHPUT_RULE, throughput_stats
from bench.results.summary import Summary, summarize
from bench.trials.model import TrialReader

# (summary so far or None, the store, trial id) -> the summary with the enricher's section (or as it was).
Enricher = Callable[[Summary | None, TrialReader, str], Summary | None]

_ENRICHERS: dict[str, Enricher] = {}


def register_enricher(section: str, enrich: Enricher) -> None:
    """Register what adds the section ``section`` to a stored trial's summary; again with a name replaces it."""
    _ENRICHERS[section] = enrich


def driver_loop_enricher(summary: Summary | None, trials: TrialReader, trial_id: str) -> Summary | None:
    """The core's own enricher: the load driver's event loop per worker step (``bench.results.driver_loop``), the
    section whenever rows exist and a note per saturated worker step."""
    from bench.results.driver_loop import SECTION, busy_notes, driver_loop_section, schedule_notes

    section = driver_loop_section(trials.telemetry(trial_id))
    if section is None or summary is None:
        return summary
    return summary.with_section(SECTION, section.model_dump(mode="json"),
                                [*busy_notes(section), *schedule_notes(section, summary.tasks)])


def dropped_enricher(summary: Summary | None, trials: TrialReader, trial_id: str) -> Summary | None:
    """The core's counts of arrival-rate tasks (``bench.results.dropped``): scheduled and dropped iterations on
    their task summaries, a note for each that dropped any. Idempotent: it runs again on a stored summary."""
    from bench.results.dropped import arrival_counts, with_arrivals

    counts = arrival_counts(trials.telemetry(trial_id))
    if not counts:
        return summary
    return with_arrivals(summary if summary is not None else Summary(), counts)


def vector_recall_enricher(summary: Summary | None, trials: TrialReader, trial_id: str) -> Summary | None:
    """The core's recall section of vector searches (``bench.results.vector_recall``), when any sample has one."""
    from bench.results.vector_recall import SECTION, recall_section

    if summary is None:
        return summary
    section = recall_section(trials.samples(trial_id))
    return summary if section is None else summary.with_section(SECTION, section)


def _register_core_sections() -> None:
    """The core's own stored sections: the load driver's event loop, dropped iterations, vector search recall,
    thresholds."""
    from bench.results import dropped, thresholds, vector_recall
    from bench.results.driver_loop import SECTION, section_rows
    from bench.results.sections import register_section

    register_enricher(SECTION, driver_loop_enricher)
    register_enricher(dropped.SECTION, dropped_enricher)
    register_section(SECTION, rows=section_rows, title="Load driver", order=14)
    register_enricher(vector_recall.SECTION, vector_recall_enricher)
    # The thresholds' verdicts: their own table in every report format (bench.results.threshold_report), no rows.
    register_section(thresholds.SECTION, rows=lambda data: [], title="Thresholds", order=1)
    register_section(vector_recall.SECTION, rows=vector_recall.section_rows, title="Vector search recall", order=12,
                     headline=lambda metric: metric in ("Mean recall@k", "Mean recall@1"))


_register_core_sections()


def enrich(summary: Summary | None, trials: TrialReader, trial_id: str, *,
           missing_only: bool = False) -> Summary | None:
    """``summary`` with every registered enricher's section; ``missing_only``: keep sections it already has."""
    extensions.load()
    for section, add in list(_ENRICHERS.items()):
        if missing_only and summary is not None and summary.section(section):
            continue
        summary = add(summary, trials, trial_id)
    return summary


def summarize_stored(trials: TrialReader, trial_id: str) -> Summary | None:
    """A summary computed afresh from the trial's stored samples and its enrichers' data; None: nothing stored."""
    df = trials.samples(trial_id)
    return enrich(summarize(df) if not df.empty else None, trials, trial_id)


def stored_summary(trials: TrialReader, trial_id: str) -> Summary | None:
    """The trial's stored summary (recomputed from its samples when none was stored), with the sections it
    lacks added from the stored data."""
    summary = trials.summary(trial_id)
    if summary is None:
        df = trials.samples(trial_id)
        summary = summarize(df) if not df.empty else None
    elif any(ts.throughput is not None and ts.throughput.rule != THROUGHPUT_RULE for ts in summary.tasks):
        summary = _current_throughput(summary, trials, trial_id)
    return enrich(summary, trials, trial_id, missing_only=True)


def _current_throughput(summary: Summary, trials: TrialReader, trial_id: str) -> Summary:
    """A summary stored when throughput was computed by an older rule gets it afresh from its stored samples,
    so trials of different bench versions compare like with like (without samples it stays as stored)."""
    df = trials.samples(trial_id)
    if df.empty:
        return summary
    tasks = [ts.model_copy(update={"throughput": throughput_stats(df, ts.task)})
             if ts.throughput is not None and ts.throughput.rule != THROUGHPUT_RULE else ts for ts in summary.tasks]
    return summary.model_copy(update={"tasks": tasks})
