"""OpenSearch Benchmark's k-NN operation types: ``vector-search`` (with recall), ``bulk-vector-data-set``,
``train-knn-model`` and ``delete-knn-model`` (osbenchmark/worker_coordinator/runner.py and
osbenchmark/workload/params.py: ``VectorSearchPartitionParamSource``, ``BulkVectorsFromDataSetParamSource``).

Queries and vectors come from a data set file (``data_set_format`` hdf5 or bigann, ``data_set_path``), split
between a task's clients as OSB splits it (``num_vectors`` over clients, the last taking the remainder). A
vector-search request's true neighbours travel with it; its recall goes into the sample's meta under OSB's names
(``recall@k``, ``recall@1``, ``recall@max_distance[_1]``, ``recall@min_score[_1]``, ``recall_time_ms``). As in OSB,
parsing the answer and computing recall are not part of the request's time (``Result.after_response``).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.driver import recall
from bench.driver.bulk.bodies import BulkBody
from bench.driver.param_types import param_float, param_int
from bench.driver.runners.core import Context, Result, bulk, raw_failure
from bench.driver.runners.support import Call, failed, problem
from bench.driver.vector_data import FORMATS, VectorDataSet
from bench.track.model import Task
from bench.util.errors import TrackError

VECTOR_SEARCH = "vector-search"
BULK_VECTORS = "bulk-vector-data-set"
_FILTER_TYPES = ("efficient", "post_filter", "boolean", "script")


def _text(p: dict[str, Any], key: str) -> str:
    """OSB reads an empty string as absent (parse_string_parameter); templates write "" for undefined values."""
    v = p.get(key)
    return v if isinstance(v, str) else ""


# ------------------------------------------------------------------ load-time checks


def check_vector(name: str, op_type: str, params: dict[str, Any], *, track_file: str) -> None:
    where = f"{track_file}: operation '{name}' ({op_type})"
    if op_type in (VECTOR_SEARCH, BULK_VECTORS):
        fmt = params.get("data_set_format")
        if fmt not in FORMATS:
            raise TrackError(f"{where} has data_set_format {fmt!r}: use one of {', '.join(FORMATS)}")
        for key in ("data_set_corpus", "neighbors_data_set_corpus", "parents_data_set_corpus"):
            if _text(params, key):
                raise TrackError(f"{where} names {key} {params[key]!r}: bench reads vector data sets from a file "
                                 f"only; give its path in {key.replace('_corpus', '_path')}")
        if not _text(params, "data_set_path"):
            raise TrackError(f"{where} has no data_set_path: give the path of the {fmt} data set file")
        for key in ("data_set_path", "neighbors_data_set_path", "parents_data_set_path"):
            # Checked at load, not when the clients are built: a missing file is the workload's problem, in one line.
            if _text(params, key) and not Path(params[key]).is_file():
                raise TrackError(f"{where} has {key} {params[key]!r}, which is not a file: download the data set "
                                 f"there or give the path of your copy")
        if not isinstance(params.get("field"), str) or not params["field"]:
            raise TrackError(f"{where} needs 'field': the name of the vector field")
        if params.get("field", "").count(".") > 1:
            raise TrackError(f"{where} has field {params['field']!r}: OSB supports one level of nesting")
    if op_type == VECTOR_SEARCH:
        for key in ("radial_search_type",):
            if key in params:
                raise TrackError(f"{where} has {key}: per-query radial thresholds are not built in bench; use "
                                 f"max_distance or min_score")
        ftype = params.get("filter_type")
        if ftype and ftype not in _FILTER_TYPES:
            raise TrackError(f"{where} has filter_type {ftype!r}: use one of {', '.join(_FILTER_TYPES)}")
        if params.get("oversample_factor") and ("max_distance" in params or "min_score" in params):
            raise TrackError(f"{where} has oversample_factor with max_distance or min_score: rescoring works with "
                             f"top-k search only (as in OSB)")
        k = params.get("k")
        if k is not None and (not isinstance(k, int) or isinstance(k, bool) or k < 1):
            raise TrackError(f"{where} has k {k!r}: use a positive integer")
        if k is None and "max_distance" not in params and "min_score" not in params:
            raise TrackError(f"{where} needs k (or max_distance or min_score)")
    if op_type == BULK_VECTORS:
        size = params.get("bulk_size")
        if not isinstance(size, int) or isinstance(size, bool) or size < 1:
            raise TrackError(f"{where} has bulk_size {size!r}: use a positive integer")
        if not isinstance(params.get("index"), str):
            raise TrackError(f"{where} needs 'index': the index to add the vectors to")
        if params.get("filter_attributes"):
            raise TrackError(f"{where} has filter_attributes: bench does not index a data set's attributes yet")


# ------------------------------------------------------------------ parameter sources


def _partition(total: int, clients: int, client: int) -> tuple[int, int]:
    """OSB's split: ``total // clients`` rows each from ``client * that``; the last client also takes the rest."""
    per = total // clients
    start = client * per
    count = per + (total - per * clients if client == clients - 1 else 0)
    return start, count


def _num_vectors(p: dict[str, Any], size: int) -> int:
    n = param_int(p, "num_vectors", -1)
    return size if n < 0 or n > size else n


def _query(p: dict[str, Any], vector: list[float], field: str, k: int | None) -> dict[str, Any]:
    """OSB's ``_build_vector_search_query_body``."""
    q: dict[str, Any] = {"vector": vector}
    if k is not None:
        q["k"] = k
    for key in ("max_distance", "min_score"):
        if key in p:
            q[key] = p[key]
    ftype, fbody = p.get("filter_type") or None, p.get("filter_body") or None
    if ftype == "efficient" and fbody:
        q["filter"] = fbody
    if p.get("oversample_factor"):
        q["rescore"] = {"oversample_factor": p["oversample_factor"]}
    knn = {"knn": {field: q}}
    if "." in field:
        return {"nested": {"path": field.split(".")[0], "query": knn}}
    if ftype == "script":
        return {"script_score": {"query": {"bool": {"filter": fbody}}, "script": {
            "source": "knn_score", "lang": "knn",
            "params": {"field": field, "query_value": vector, "space_type": p.get("space_type", "l2")}}}}
    if ftype == "boolean":
        return {"bool": {"filter": fbody, "must": [knn]}}
    return knn


class VectorSearchSource(Iterator[dict[str, Any]]):
    """A client's queries: its partition of the query vectors, ``repetitions`` times, each with its true
    neighbours. Finite: the client stops when its queries are used up (or its time is)."""

    finite = True

    def __init__(self, task: Task, client: int) -> None:
        p = task.operation.params
        self.field = str(p["field"])
        self.k: int | None = p.get("k")
        self.params = p
        fmt = str(p["data_set_format"])
        queries = VectorDataSet(fmt, _text(p, "data_set_path"), "query")
        radial = "max_distance" in p or "min_score" in p
        neighbors_path = _text(p, "neighbors_data_set_path") or _text(p, "data_set_path")
        neighbors = VectorDataSet(_text(p, "neighbors_data_set_format") or fmt, neighbors_path,
                                  "radial_neighbors" if radial else "neighbors")
        start, count = _partition(_num_vectors(p, queries.size), task.clients, client)
        self.vectors = queries.rows(start, start + count)
        self.truth = neighbors.rows(start, start + count)
        self.repetitions = param_int(p, "repetitions", 1)
        self.base = {k: v for k, v in p.items() if k not in ("body", "filter_body", "request-params")}
        request_params = dict(p.get("request-params") or {})
        request_params.setdefault("allow_partial_search_results", "false")
        self.base["request-params"] = request_params
        self.i = 0

    def __next__(self) -> dict[str, Any]:
        n = len(self.vectors)
        if n == 0 or self.i >= n * self.repetitions:
            raise StopIteration
        row = self.i % n
        self.i += 1
        vector = self.vectors[row].tolist()
        truth = self.truth[row]
        ids = truth[:self.k] if self.k is not None else truth[truth >= 0]
        body = dict(self.params.get("body") or {})
        if "size" not in body and self.k is not None:
            body["size"] = self.k
        body["query"] = _query(self.params, vector, self.field, self.k)
        if self.params.get("filter_type") == "post_filter":
            body["post_filter"] = self.params.get("filter_body")
        return {**self.base, "neighbors": [str(int(x)) for x in ids],
                "_body_bytes": json.dumps(body, separators=(",", ":")).encode()}


class BulkVectorSource(Iterator[dict[str, Any]]):
    """A client's bulks of its partition of the vectors: ``index`` actions with the row number as ``_id`` (or in
    ``id-field-name``), ``bulk_size`` vectors each, as OSB's ``BulkVectorsFromDataSetParamSource`` writes them.
    A nested field (``outer.inner``) groups consecutive vectors of one parent (the data set's ``parents``)."""

    finite = True

    def __init__(self, task: Task, client: int) -> None:
        p = task.operation.params
        fmt = str(p["data_set_format"])
        data = VectorDataSet(fmt, _text(p, "data_set_path"), "index")
        self.start, self.count = _partition(_num_vectors(p, data.size), task.clients, client)
        self.data = data
        self.parents = VectorDataSet(fmt, _text(p, "parents_data_set_path") or _text(p, "data_set_path"),
                                     "parents") if "." in str(p["field"]) else None
        self.field = str(p["field"])
        self.index = str(p["index"])
        self.id_field = _text(p, "id-field-name") or "_id"
        self.bulk_size = int(p["bulk_size"])
        self.base = {k: v for k, v in p.items() if k not in ("body",)}
        self.base["path"] = "/_bulk?filter_path=errors,items.*.error"
        self.done = 0

    def __next__(self) -> dict[str, Any]:
        if self.done >= self.count:
            raise StopIteration
        lo = self.start + self.done
        hi = min(lo + self.bulk_size, self.start + self.count)
        vectors = self.data.rows(lo, hi).tolist()
        self.done += hi - lo
        if self.parents is None:
            docs = [(lo + j, {self.field: v}) for j, v in enumerate(vectors)]
        else:
            docs = self._nested(vectors, self.parents.rows(lo, hi)[:, 0].tolist())
        lines = []
        for doc_id, doc in docs:
            meta: dict[str, Any] = {"_index": self.index}
            if self.id_field == "_id":
                meta["_id"] = int(doc_id)
            else:
                doc[self.id_field] = int(doc_id)
            lines.append(json.dumps({"index": meta}, separators=(",", ":")))
            lines.append(json.dumps(doc, separators=(",", ":")))
        body = ("\n".join(lines) + "\n").encode()
        return {**self.base, "body": BulkBody(body, len(docs), len(body), False)}

    def _nested(self, vectors: list[list[float]], parents: list[int]) -> list[tuple[int, dict[str, Any]]]:
        """One document per run of equal parent ids: ``{outer: [{inner: vector}, ...]}``. A run cut by the end of a
        bulk continues as a document of its own in the next (bench does not hold vectors back between bulks)."""
        outer, inner = self.field.split(".")
        docs: list[tuple[int, dict[str, Any]]] = []
        for v, parent in zip(vectors, parents, strict=True):
            if docs and docs[-1][0] == parent:
                docs[-1][1][outer].append({inner: v})
            else:
                docs.append((int(parent), {outer: [{inner: v}]}))
        return docs


def vector_search_source(task: Task, client: int) -> Iterator[dict[str, Any]]:
    return VectorSearchSource(task, client)


def bulk_vector_source(task: Task, client: int) -> Iterator[dict[str, Any]]:
    return BulkVectorSource(task, client)


# ------------------------------------------------------------------ runners


def _hit_id(hit: dict[str, Any], field: str) -> Any:
    """OSB's ``_get_field_value``: the hit's own key, else ``fields``, else ``_source``."""
    if field in hit:
        return hit[field]
    fields = hit.get("fields")
    if isinstance(fields, dict) and field in fields:
        return fields[field][0]
    source = hit.get("_source")
    if isinstance(source, dict):
        return _hit_id(source, field)
    return None


async def vector_search(ctx: Context, p: dict[str, Any]) -> Result:
    index = p.get("index") or ctx.default_index()
    body: bytes = p["_body_bytes"]
    status, raw = await ctx.cluster(p).send("POST", f"/{index}/_search", body, params=p.get("request-params"),
                                            idempotent=True)
    answered = time.monotonic()
    if status >= 400:
        return raw_failure(status, raw, bytes_sent=len(body))
    resp = json.loads(raw)
    meta: dict[str, Any] = {}
    if p.get("detailed-results"):
        total = (resp.get("hits") or {}).get("total")
        meta.update({"hits": total.get("value") if isinstance(total, dict) else total,
                     "hits_relation": total.get("relation", "eq") if isinstance(total, dict) else "eq",
                     "timed_out": resp.get("timed_out", False), "took": resp.get("took", 0)})
    if p.get("calculate-recall", True):
        id_field = _text(p, "id-field-name") or "_id"
        # Ids compare as text: the true neighbours are row numbers, and an id field may hold them as integers.
        found = [str(v) for v in (_hit_id(h, id_field) for h in (resp.get("hits") or {}).get("hits") or [])
                 if v is not None]
        truth = p["neighbors"]
        if p.get("k") is not None and "max_distance" not in p and "min_score" not in p:
            meta["recall@k"] = recall.top_k_recall(found, truth, int(p["k"]))
            meta["recall@1"] = recall.top_k_recall(found, truth, 1)
        else:
            kind = "min_score" if "min_score" in p else "max_distance"
            meta[f"recall@{kind}"] = recall.radial_recall(found, truth)
            meta[f"recall@{kind}_1"] = recall.radial_recall(found, truth, top_1=True)
        meta["recall_time_ms"] = (time.monotonic() - answered) * 1000.0
    res = Result(bytes_sent=len(body), bytes_received=len(raw), status=status, meta=meta or None)
    if resp.get("timed_out"):
        res.success, res.error_type, res.detail = False, "search-timed-out", "search timed out"
    res.after_response = time.monotonic() - answered
    return res


async def bulk_vectors(ctx: Context, p: dict[str, Any]) -> Result:
    return await bulk(ctx, p)


async def train_knn_model(ctx: Context, p: dict[str, Any]) -> Result:
    """POST the training request, then poll the model until it is no longer ``training`` (OSB: ``retries`` polls,
    default 1000, ``poll_period`` s apart, default 0.5): success when ``created``."""
    call = Call(ctx, p)
    model = str(p["model_id"])
    status, resp = await call("POST", f"/_plugins/_knn/models/{model}/_train", body=p["body"])
    if status >= 400:
        return failed(status, resp)
    retries = param_int(p, "retries", 1000)
    period = param_float(p, "poll_period", 0.5)
    for _ in range(retries + 1):
        status, resp = await call("GET", f"/_plugins/_knn/models/{model}", own_params=False)
        if status >= 400:
            return failed(status, resp)
        state = resp.get("state") if isinstance(resp, dict) else None
        if state == "created":
            return Result()
        if state != "training":
            return problem("knn-model", f"model {model} is {state!r}: {resp}")
        await asyncio.sleep(period)
    return problem("knn-model", f"model {model} still training after {retries} polls")


async def delete_knn_model(ctx: Context, p: dict[str, Any]) -> Result:
    model = str(p["model_id"])
    status, resp = await Call(ctx, p)("DELETE", f"/_plugins/_knn/models/{model}")
    if status == 404 and p.get("ignore-if-model-does-not-exist", False):
        return Result()
    if status >= 400:
        return failed(status, resp)
    if not (isinstance(resp, dict) and resp.get("result") == "deleted"):
        return problem("knn-model", f"model {model} was not deleted: {resp}")
    return Result()


RUNNERS: dict[str, tuple[Any, tuple[str, ...]]] = {
    VECTOR_SEARCH: (vector_search, ("field", "data_set_format")),
    BULK_VECTORS: (bulk_vectors, ("field", "data_set_format", "bulk_size", "index")),
    "train-knn-model": (train_knn_model, ("model_id", "body")),
    "delete-knn-model": (delete_knn_model, ("model_id",)),
}
SOURCES = {VECTOR_SEARCH: vector_search_source, BULK_VECTORS: bulk_vector_source}
