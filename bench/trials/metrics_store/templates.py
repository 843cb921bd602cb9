"""The index templates of the metrics store, put on first use (composable templates: Elasticsearch ≥ 7.8 and
OpenSearch alike). Field types follow Rally's templates, so a Rally user's dashboards find what they expect;
``bench`` (exact values for reading back) is kept in ``_source`` only, never indexed."""

from __future__ import annotations

from typing import Any

from bench.trials.metrics_store.layout import METRICS, RACES, RESULTS, Layout, kind, mapping_properties

# High enough to win over a catch-all template, so a store holding other data keeps these mappings.
PRIORITY = 300

_KEYWORDS = {"type": "keyword", "ignore_above": 8191}
_STRINGS_AS_KEYWORDS = [{"strings": {"match": "*", "match_mapping_type": "string", "mapping": _KEYWORDS}}]
_RACE_TS = {"type": "date", "format": "basic_date_time_no_millis", "fields": {"raw": {"type": "keyword"}}}
_COMMON = {"race-id": {"type": "keyword"}, "race-timestamp": _RACE_TS, "environment": {"type": "keyword"},
           "track": {"type": "keyword"}, "challenge": {"type": "keyword"}, "car": {"type": "keyword"},
           "bench-version": {"type": "keyword"}, "bench": {"type": "object", "enabled": False}}


def _mappings(index_kind: str, layout: Layout) -> dict[str, Any]:
    props: dict[str, Any] = dict(_COMMON)
    if index_kind == RACES:
        props |= {"pipeline": {"type": "keyword"}, "node-count": {"type": "short"}, "status": {"type": "keyword"},
                  "test-mode": {"type": "boolean"}, "end-timestamp": _RACE_TS, "error": {"type": "text"}}
    elif index_kind == METRICS:
        props |= {"@timestamp": {"type": "date", "format": "epoch_millis"}, "relative-time": {"type": "float"},
                  "name": {"type": "keyword"}, "value": {"type": "float"}, "unit": {"type": "keyword"},
                  "sample-type": {"type": "keyword"}, "task": {"type": "keyword"}, "operation": {"type": "keyword"},
                  "operation-type": {"type": "keyword"}, "bench-record": {"type": "keyword"},
                  "bench-seq": {"type": "long"}}
    else:
        props |= {"active": {"type": "boolean"}, "distribution-version": {"type": "keyword"},
                  "distribution-flavor": {"type": "keyword"}, "distribution-major-version": {"type": "short"},
                  "task": {"type": "keyword"}, "operation": {"type": "keyword"}, "name": {"type": "keyword"},
                  "unit": {"type": "keyword"},
                  "value": {"type": "object", "properties": {k: {"type": "double"} for k in
                                                             ("single", "min", "mean", "median", "max")}}}
    return {"date_detection": False, "dynamic_templates": _STRINGS_AS_KEYWORDS,
            "properties": mapping_properties(props, layout)}


def index_templates(prefix: str, layout: Layout = "rally") -> dict[str, dict[str, Any]]:
    """Template name -> body, for the races (OSB: test-runs), metrics and results indices under ``prefix``."""
    return {f"{prefix}-{kind(k, layout)}-bench": {
        "index_patterns": [f"{prefix}-{kind(k, layout)}-*"], "priority": PRIORITY,
        "template": {"settings": {"index": {"mapping.total_fields.limit": 2000}}, "mappings": _mappings(k, layout)},
        "_meta": {"created_by": "bench"}} for k in (RACES, METRICS, RESULTS)}
