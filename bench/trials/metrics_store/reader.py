"""Reading trials back from the metrics store (``TrialReader``): what ``bench list/show/compare/report`` and
experiments' history see of trials pushed from any machine."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pandas as pd

from bench.results.summary import Summary
from bench.trials.metrics_store import documents
from bench.trials.metrics_store.config import StoreConfig
from bench.trials.metrics_store.http import StoreHttp
from bench.trials.metrics_store.layout import field, from_layout, kind
from bench.trials.model import DamagedTrial, TrialInfo
from bench.util.errors import StoreError

_PAGE = 5000


class StoreReader:
    def __init__(self, config: StoreConfig, http: StoreHttp | None = None) -> None:
        self.config = config
        self.http = http or StoreHttp(config)
        self._layout = config.layout
        self._races = f"{config.prefix}-{kind(documents.RACES, config.layout)}-*"
        self._metrics = f"{config.prefix}-{kind(documents.METRICS, config.layout)}-*"
        # Queries name fields as the store's layout does; documents read back are in Rally's names again.
        self._id = field("race-id", config.layout)
        self.damaged: list[DamagedTrial] = []  # what the last list_trials left out

    def _search(self, index: str, body: dict[str, Any]) -> list[dict[str, Any]]:
        _, res = self.http.request("POST", f"/{index}/_search?ignore_unavailable=true&allow_no_indices=true", body)
        return [from_layout(h["_source"], self._layout) | {"_sort": h.get("sort")}
                for h in (res or {}).get("hits", {}).get("hits", [])]

    def _race_docs(self, query: dict[str, Any], size: int) -> list[dict[str, Any]]:
        # Only bench's races: Rally's own documents in the same indices have no bench object to read back.
        q = {"bool": {"filter": [query, {"exists": {"field": "bench-version"}}]}}
        newest = {field("race-timestamp", self._layout): {"order": "desc", "unmapped_type": "date"}}
        return self._search(self._races, {"query": q, "size": size, "sort": [newest]})

    def race_doc(self, trial_id: str) -> dict[str, Any] | None:
        docs = self._race_docs({"term": {self._id: trial_id}}, 1)
        return docs[0] if docs else None

    def get_trial(self, id_or_prefix: str) -> TrialInfo:
        key = (id_or_prefix or "").strip().lower()
        if not key or any(ch not in "0123456789abcdef" for ch in key):
            raise StoreError(f"{id_or_prefix!r} is not a trial id (hex digits): run 'bench list trials'")
        docs = self._race_docs({"prefix": {self._id: key}}, 3)
        exact = [d for d in docs if d["race-id"] == key]
        if exact:
            return documents.trial_of(exact[0])
        if not docs:
            raise StoreError(f"no trial with id {id_or_prefix!r} in the metrics store {self.http.name}: run "
                             "'bench list trials'")
        if len(docs) > 1:
            raise StoreError(f"trial id prefix {id_or_prefix!r} is ambiguous (matches "
                             f"{', '.join(d['race-id'][:12] for d in docs[:2])}, ...): give more characters")
        return documents.trial_of(docs[0])

    def delete_race(self, trial_id: str) -> int:
        """Delete the race's documents (race, metrics, results) from the store; how many were deleted."""
        indices = ",".join(f"{self.config.prefix}-{kind(k, self._layout)}-*"
                           for k in (documents.RACES, documents.METRICS, documents.RESULTS))
        _, res = self.http.request("POST", f"/{indices}/_delete_by_query?ignore_unavailable=true&allow_no_indices="
                                           f"true&refresh=true&conflicts=proceed",
                                   {"query": {"term": {self._id: trial_id}}})
        return int((res or {}).get("deleted", 0))

    def list_trials(self, limit: int = 50) -> list[TrialInfo]:
        """Newest first (at most 10,000: the store's default result window)."""
        docs = self._race_docs({"match_all": {}}, max(1, min(int(limit), 10_000)))
        trials, self.damaged = [], []
        for d in docs:
            try:
                trials.append(documents.trial_of(d))
            except (KeyError, TypeError, ValueError) as e:  # a race document bench cannot read back
                self.damaged.append(DamagedTrial(id=str(d.get("race-id")), problem=f"its race document in the "
                                                 f"metrics store {self.http.name} cannot be read ({e})"))
        return trials

    def ids(self, trial_ids: list[str]) -> set[str]:
        """Which of these trials the store holds."""
        if not trial_ids:
            return set()
        docs = self._race_docs({"terms": {self._id: trial_ids}}, len(trial_ids))
        return {d["race-id"] for d in docs}

    def _records(self, trial_id: str, record: str, extra: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        q = {"bool": {"filter": [{"term": {self._id: trial_id}}, {"term": {"bench-record": record}}, *extra]}}
        after: list[Any] | None = None
        while True:
            # unmapped_type: Rally's own metrics indices under the same pattern have no bench-seq.
            body: dict[str, Any] = {"query": q, "size": _PAGE,
                                    "sort": [{"bench-seq": {"order": "asc", "unmapped_type": "long"}}]}
            if after is not None:
                body["search_after"] = after
            hits = self._search(self._metrics, body)
            yield from hits
            if len(hits) < _PAGE:
                return
            after = hits[-1]["_sort"]

    def samples(self, trial_id: str) -> pd.DataFrame:
        """The request samples that reached the store (every one, or every n-th with downsampling)."""
        return documents.samples_frame(list(self._records(trial_id, "request", [{"term": {"name": "service_time"}}])))

    def telemetry(self, trial_id: str) -> pd.DataFrame:
        return documents.telemetry_frame(list(self._records(trial_id, "telemetry", [])))

    def summary(self, trial_id: str) -> Summary | None:
        doc = self.race_doc(trial_id)
        return documents.summary_of(doc) if doc else None

    def close(self) -> None:
        self.http.close()
