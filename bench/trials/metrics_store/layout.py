"""The metrics store's layout: Rally's index and field names (the default) or OpenSearch Benchmark's.

bench builds its documents in Rally's names (``documents``); with the ``osb`` layout they are renamed here on the
way out and back on the way in, so a dashboard built on OSB's store reads bench's documents. The names are OSB's
own: ``osbenchmark/resources/{test-runs,metrics,results}-template.json`` and the writers in
``osbenchmark/metrics.py`` (``TestRun.as_dict``, ``to_result_dicts``, ``OsMetricsStore._put``). Only top-level
fields differ; ``meta``, ``value``, ``name``, ``task`` and bench's own fields (``bench``, ``bench-version``,
``bench-record``, ``bench-seq``) are the same in both.
"""

from __future__ import annotations

from typing import Any, Literal

# The index kinds, by Rally's names (``documents`` and ``templates`` use them).
RACES, METRICS, RESULTS = "races", "metrics", "results"

Layout = Literal["rally", "osb"]
LAYOUTS: tuple[Layout, ...] = ("rally", "osb")

# Rally's name -> OSB's name, for every top-level field bench writes whose name differs.
OSB_FIELDS: dict[str, str] = {
    "race-id": "test-run-id",
    "race-timestamp": "test-run-timestamp",
    "track": "workload",
    "challenge": "test_procedure",
    "car": "cluster-config-instance",
    "track-params": "workload-params",
    "relative-time": "relative-time-ms",
}
_OSB_BACK = {v: k for k, v in OSB_FIELDS.items()}

# Index kinds: OSB keeps one document per run in benchmark-test-runs-*, where Rally has rally-races-*.
OSB_KINDS: dict[str, str] = {RACES: "test-runs", METRICS: METRICS, RESULTS: RESULTS}

DEFAULT_PREFIX: dict[Layout, str] = {"rally": "rally", "osb": "benchmark"}


def field(name: str, layout: Layout) -> str:
    """A top-level field's name in the layout (``race-id`` -> ``test-run-id`` for osb)."""
    return OSB_FIELDS.get(name, name) if layout == "osb" else name


def kind(name: str, layout: Layout) -> str:
    """An index kind's name in the layout (``races`` -> ``test-runs`` for osb)."""
    return OSB_KINDS[name] if layout == "osb" else name


def to_layout(doc: dict[str, Any], layout: Layout) -> dict[str, Any]:
    """A document in Rally's names, as the layout names its fields (a new dict; the same one for rally)."""
    if layout == "rally":
        return doc
    return {OSB_FIELDS.get(k, k): v for k, v in doc.items()}


def from_layout(doc: dict[str, Any], layout: Layout) -> dict[str, Any]:
    """A document read from a store of the layout, in Rally's names again."""
    if layout == "rally":
        return doc
    return {_OSB_BACK.get(k, k): v for k, v in doc.items()}


def mapping_properties(props: dict[str, Any], layout: Layout) -> dict[str, Any]:
    """An index template's top-level properties, renamed for the layout."""
    return to_layout(props, layout)
