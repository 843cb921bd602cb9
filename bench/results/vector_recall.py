"""Vector search recall per task, as OpenSearch Benchmark reports it ("Mean recall@k", "Mean recall@1" and the
radial forms, osbenchmark/publisher.py): the mean over a task's measured, successful requests of what each put
in its sample's meta (``bench.driver.runners.vector``). Pure functions of the samples.
"""

from __future__ import annotations

import json
from typing import Any

import pandas as pd

from bench.results.sections import MetricRow

SECTION = "vector-recall"
KEYS = ("recall@k", "recall@1", "recall@max_distance", "recall@max_distance_1", "recall@min_score",
        "recall@min_score_1")


def recall_section(samples: pd.DataFrame) -> dict[str, Any] | None:
    """{task: {key: {"mean", "count"}}} over measured, successful samples; None when no sample has recall."""
    if samples.empty or "meta" not in samples:
        return None
    d = samples[~samples["warmup"] & samples["success"] & samples["meta"].notna()]
    d = d[d["meta"].str.contains('"recall@', regex=False)]
    if d.empty:
        return None
    values: dict[str, dict[str, list[float]]] = {}
    for task, meta in zip(d["task"], d["meta"]):
        m = json.loads(meta)
        for key in KEYS:
            if isinstance(m.get(key), int | float):
                values.setdefault(str(task), {}).setdefault(key, []).append(float(m[key]))
    return {task: {k: {"mean": sum(v) / len(v), "count": len(v)} for k, v in keys.items()}
            for task, keys in values.items()} or None


def section_rows(data: dict[str, Any]) -> list[MetricRow]:
    return [MetricRow(metric=f"Mean {key}", task=task, value=stats["mean"], unit="")
            for task, keys in (data or {}).items() for key in KEYS if (stats := keys.get(key))]
