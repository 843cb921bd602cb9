"""Recall of a vector search against its true neighbours, as OpenSearch Benchmark's ``vector-search`` reports it
(osbenchmark/worker_coordinator/runner.py, ``Query._vector_search_query_with_recall``). Pure functions.

Top-k recall: of the first ``min(k, len(truth))`` true neighbours, the share found among as many first results.
Data sets pad a query's neighbour list with -1 where it has fewer true neighbours; those are not neighbours, so
the truth set ends at the first -1, and a query with none has recall 1.0 (OSB's rule). OSB's own slicing at that
point drops one more true neighbour than it means to (its comment says "ignore the first -1"); bench keeps every
true neighbour, so the two differ only for queries whose first ``k`` neighbours are padded.

Radial recall (``max_distance``/``min_score``): the share of all true neighbours found among the results; its
"@1" form is whether the first result is a true neighbour.
"""

from __future__ import annotations

from collections.abc import Sequence

PAD = "-1"


def _truth(neighbors: Sequence[str], limit: int | None = None) -> list[str]:
    head = list(neighbors[:limit]) if limit is not None else list(neighbors)
    return head[:head.index(PAD)] if PAD in head else head


def top_k_recall(predictions: Sequence[str], neighbors: Sequence[str], k: int) -> float:
    """recall@k: how many of the first k true neighbours are among the first k results, over how many there are."""
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    n = min(k, len(neighbors))
    truth = _truth(neighbors, n)
    if not truth:
        return 1.0
    wanted = set(truth)
    return sum(1 for p in predictions[:n] if p in wanted) / len(truth)


def radial_recall(predictions: Sequence[str], neighbors: Sequence[str], *, top_1: bool = False) -> float:
    """recall@max_distance / recall@min_score (``top_1``: its @1 form)."""
    truth = _truth(neighbors)
    if not truth:
        return 1.0
    if top_1:
        return 1.0 if predictions and predictions[0] in truth else 0.0
    return len(set(predictions) & set(truth)) / len(truth)
