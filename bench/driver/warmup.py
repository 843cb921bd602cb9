"""Warmup that fits the run, decided before the race.

A bulk task whose clients each send their slice of a corpus once (no ``looped``, no extension's source) ends when
the corpus is sent, so its warmup can swallow the whole task: 20,000 documents are indexed well within the usual
10 s ``warmup-time-period``, and nothing is measured. Two rules, both known before the first request:

- ``warmup-iterations`` (no time period): each client's first N requests are warmup. A corpus that gives no
  client more requests than that leaves nothing to measure, which is an error naming the task; a corpus that
  leaves only some clients without measured requests is said up front.
- ``warmup-time-period``: the warmup ends after that time or after half of each client's requests, whichever
  comes first (``Bounds.warmup_cap``), so at least half of a corpus-bounded task is always measured. How fast
  the cluster indexes is not known beforehand, so the race states the rule for each such task in one line before
  it starts; a large corpus never reaches the cap and keeps the declared warmup.
"""

from __future__ import annotations

import math

from bench.driver.bulk.bodies import client_budget, client_slice
from bench.driver.param_sources import bulk_size_bytes, ingest_doc_count, sends_corpus_once
from bench.driver.param_types import param_bool
from bench.track.corpus import bulk_documents
from bench.track.model import Challenge, Task, Track
from bench.util.errors import TrackError


def corpus_requests(track: Track, task: Task) -> list[int] | None:
    """Bulk requests each client of a corpus-bounded task sends (the arithmetic of ``prepare_bodies``), or None
    when that is not known before the bodies are built (``bulk-size-mb`` cuts by bytes) or the task is not
    corpus-bounded."""
    if not sends_corpus_once(task) or bulk_size_bytes(task) is not None or param_bool(task.operation.params,
                                                                                        "shard-aware", False):
        return None  # shard-aware: bulks per node, counted only when the routing is known
    p = task.operation.params
    try:
        bulk_size = int(p.get("bulk-size", 1))
        ingest = float(p.get("ingest-percentage", 100))
    except (TypeError, ValueError):
        return None  # the bulk source names the bad value when the race builds it
    if bulk_size < 1:
        return None
    counts = [0] * task.clients
    budgets = [client_budget(ingest_doc_count(task), task.clients)] * task.clients
    for doc in bulk_documents(track, p):
        for c in range(task.clients):
            start, end = client_slice(doc.document_count, c, task.clients)
            docs = int((end - start) * ingest / 100.0)
            budget = budgets[c]
            if budget is not None:
                docs = min(docs, budget)
                budgets[c] = budget - docs
            counts[c] += math.ceil(docs / bulk_size)
    return counts


def _span(values: list[int]) -> str:
    lo, hi = min(values), max(values)
    return f"{lo:,}" if lo == hi else f"{lo:,}–{hi:,}"


def warmup_notes(track: Track, challenge: Challenge) -> list[str]:
    """One line per corpus-bounded task saying how its warmup ends; a TrackError for a task whose warmup would
    hold every request."""
    notes: list[str] = []
    for task in challenge.tasks():
        if not sends_corpus_once(task):
            continue
        counts = corpus_requests(track, task)
        by_time = task.warmup_time_period is not None or task.time_period is not None
        where = f"{track.root / 'track.json'}: challenge '{challenge.name}', task '{task.name}'"
        if not by_time and task.warmup_iterations:
            if counts is None:
                continue
            w = task.warmup_iterations
            if max(counts, default=0) <= w:
                raise TrackError(
                    f"{where}: warmup-iterations {w} but its corpus gives each client only {_span(counts)} bulk "
                    f"request(s), so every request would be warmup and nothing measured: lower warmup-iterations "
                    f"or index more documents")
            short = sum(1 for n in counts if n <= w)
            if short:
                notes.append(f"Task '{task.name}': {short} of {task.clients} clients send no more than their "
                             f"{w} warmup iterations; only the others' requests are measured.")
        elif by_time and task.warmup_time_period:
            period = f"{task.warmup_time_period:g} s"
            if counts is None:
                notes.append(f"Task '{task.name}': warmup {period} or the first half of each client's bulk "
                             "requests, whichever ends first (the corpus ends this task).")
            elif max(counts, default=0) <= 1:
                notes.append(f"Task '{task.name}': each client sends {_span(counts)} bulk request(s), so there is "
                             f"no warmup (the declared {period} would hold every request): all are measured.")
            else:
                caps = [n // 2 for n in counts]
                notes.append(f"Task '{task.name}': warmup {period} or {_span(caps)} of each client's "
                             f"{_span(counts)} bulk requests, whichever ends first (the corpus ends this task; "
                             "at least half of it is measured).")
    return notes
