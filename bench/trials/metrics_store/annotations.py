"""Annotations in the metrics store: Rally's ``rally-annotations`` index (``<prefix>-annotations``), its fields and
its mapping (esrally/resources/annotation-template.json), so annotations added by Rally and by bench are one set."""

from __future__ import annotations

from typing import Any

from bench.trials.annotations import Annotation
from bench.trials.metrics_store.config import StoreConfig
from bench.trials.metrics_store.http import StoreHttp
from bench.trials.metrics_store.templates import PRIORITY

_MAX = 10_000  # the store's default result window


def annotations_index(prefix: str) -> str:
    return f"{prefix}-annotations"


def annotations_template(prefix: str) -> dict[str, Any]:
    return {"index_patterns": [annotations_index(prefix)], "priority": PRIORITY, "_meta": {"created_by": "bench"},
            "template": {"mappings": {
                "dynamic_templates": [{"strings": {"match": "*", "match_mapping_type": "string",
                                                   "mapping": {"type": "keyword"}}}],
                "properties": {"environment": {"type": "keyword"},
                               "race-timestamp": {"type": "date", "format": "basic_date_time_no_millis",
                                                  "fields": {"raw": {"type": "keyword"}}},
                               "track": {"type": "keyword"}, "chart": {"type": "keyword"},
                               "chart-name": {"type": "keyword"}, "message": {"type": "keyword"}}}}}


class StoreAnnotations:
    def __init__(self, config: StoreConfig, http: StoreHttp | None = None) -> None:
        self.config = config
        self.http = http or StoreHttp(config)
        self.index = annotations_index(config.prefix)

    def add(self, a: Annotation) -> None:
        self.http.request("PUT", f"/_index_template/{self.index}-bench", annotations_template(self.config.prefix))
        self.http.request("PUT", f"/{self.index}/_doc/{a.id}?refresh=true", a.to_document())

    def list(self) -> list[Annotation]:
        """Every annotation of the store's environment (all of them: the site filters by day and track)."""
        body = {"size": _MAX, "query": {"bool": {"filter": [{"term": {"environment": self.config.environment}}]}}}
        _, res = self.http.request("POST", f"/{self.index}/_search?ignore_unavailable=true&allow_no_indices=true",
                                   body)
        return [Annotation.from_document(h["_id"], h["_source"]) for h in (res or {}).get("hits", {}).get("hits", [])]

    def delete(self, annotation_id: str) -> bool:
        status, res = self.http.request("DELETE", f"/{self.index}/_doc/{annotation_id}?refresh=true", ok=(404,))
        return status < 400 and (res or {}).get("result") == "deleted"

    def close(self) -> None:
        self.http.close()
