"""The study's search rows: the latency of search tasks that ran beside indexing (e.g. the ``ccr-with-search``
and ``baseline-with-search`` challenges), one row per percentile and cluster, so a study shows search latency with
and without CCR on the leader, and on the follower for the CCR variants.

``study.search-tasks`` names each search task and the cluster it queries in the variants that have that cluster
(``search: leader``, ``search-follower: follower``). A cluster the baseline's is matched with (``study.clusters``,
``default: leader``) is labelled with both (``default vs leader``), as the telemetry rows are: the baseline's task
of the same name ran on its only cluster.
"""

from __future__ import annotations

from bench.results.summary import Summary, percentile_label

SEARCH_PERCENTILES: tuple[float, ...] = (50.0, 90.0, 99.0)  # those the sample size supports (Rally's rule)
_LATENCY = "percentile latency (search)"
_ERRORS = "Error rate (search)"

Values = dict[str, tuple[float, str]]


def cluster_label(clusters: dict[str, str], cluster: str) -> str:
    """The row label of a candidate's cluster: ``default vs leader`` when the baseline's ``default`` is matched
    with it, else the cluster's own name."""
    return next((f"{base} vs {cand}" for base, cand in clusters.items() if cand == cluster), cluster)


def search_values(summary: Summary, search_tasks: dict[str, str], clusters: dict[str, str]) -> Values:
    """The search rows of one trial: latency percentiles (ms; latency, which includes any wait behind the
    target throughput's schedule) and error rate (%) of each named search task the trial ran."""
    out: Values = {}
    for name, cluster in search_tasks.items():
        task = next((t for t in summary.tasks if t.task == name), None)
        if task is None:
            continue
        where = cluster_label(clusters, cluster)
        for p in SEARCH_PERCENTILES:
            if p in task.latency:  # a task whose requests all failed has none: its error rate says so
                out[f"{percentile_label(p)} {_LATENCY} [{where}]"] = (task.latency[p], "ms")
        out[f"{_ERRORS} [{where}]"] = (100.0 * task.error_rate, "%")
    return out


def is_search_row(label: str) -> bool:
    return _LATENCY in label or label.startswith(_ERRORS)

