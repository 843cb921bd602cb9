"""OpenSearch Benchmark's k-NN operations: recall as OSB computes it, the data set files it reads, and a workload
that indexes a generated vector set with bulk-vector-data-set and searches it with vector-search against a real
OpenSearch 3.6.0 with the k-NN plugin (Maven Central's opensearch-knn 3.6.0.0; OpenSearch 2.19.1's Maven build
lacks the lang-painless module that plugin extends). True neighbours are computed exactly here with numpy.

That plugin zip has no native libraries, so only the Lucene engine (and the exact ``knn_score`` script) work: an
index on the faiss engine takes the node down.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import h5py
import numpy as np
import pytest

from bench.cli import main
from bench.driver.recall import radial_recall, top_k_recall
from bench.driver.runners.vector import BulkVectorSource, VectorSearchSource, _partition
from bench.driver.vector_data import VectorDataSet
from bench.provision.model import ClusterInfo
from bench.track.loader import load_track
from bench.trials.sqlite import TrialStore
from bench.trials.summary import stored_summary
from bench.util.download import fetch
from bench.util.errors import ProvisionError, TrackError
from tests.support.esnode import default_cache

KNN_ZIP = "https://repo1.maven.org/maven2/org/opensearch/plugin/opensearch-knn/3.6.0.0/opensearch-knn-3.6.0.0.zip"
JDK_21_PLUS = Path("/usr/lib/jvm/temurin-25-jdk-amd64")
K = 10


def test_top_k_recall_as_osb():
    truth = ["1", "2", "3", "4"]
    assert top_k_recall(["1", "9", "3", "8"], truth, 4) == 0.5
    assert top_k_recall(["9", "1"], truth, 1) == 0.0  # only the first result counts at k = 1
    assert top_k_recall(["2", "1"], truth, 2) == 1.0
    assert top_k_recall(["1"], truth, 4) == 0.25  # fewer results than k
    assert top_k_recall(["1", "2"], ["1", "2", "-1", "-1"], 4) == 1.0  # padding is no neighbour
    assert top_k_recall([], ["-1", "-1"], 2) == 1.0  # no true neighbour: OSB's 1.0
    assert radial_recall(["3", "9"], ["3", "4", "-1"]) == 0.5
    assert radial_recall(["9", "3"], ["3", "4"], top_1=True) == 0.0
    with pytest.raises(ValueError):
        top_k_recall([], truth, 0)


def test_partition_as_osb():
    assert [_partition(10, 3, i) for i in range(3)] == [(0, 3), (3, 3), (6, 4)]


def test_bigann_files(tmp_path):
    vecs = np.arange(12, dtype="<f4").reshape(3, 4)
    f = tmp_path / "v.fbin"
    f.write_bytes(np.array([3, 4], dtype="<u4").tobytes() + vecs.tobytes())
    ds = VectorDataSet("bigann", f, "query")
    assert ds.size == 3 and ds.rows(1, 3).tolist() == vecs[1:].tolist()
    gt = tmp_path / "gt.bin"
    ids = np.array([[2, 0], [1, 2], [0, 1]], dtype="<u4")
    gt.write_bytes(np.array([3, 2], dtype="<u4").tobytes() + ids.tobytes() + np.zeros(6, "<f4").tobytes())
    assert VectorDataSet("bigann", gt, "neighbors").rows(0, 3).tolist() == ids.tolist()
    bad = tmp_path / "bad.fbin"
    bad.write_bytes(np.array([5, 4], dtype="<u4").tobytes() + vecs.tobytes())
    with pytest.raises(TrackError, match="do not match its header"):
        VectorDataSet("bigann", bad, "query")
    with pytest.raises(TrackError, match="does not exist"):
        VectorDataSet("hdf5", tmp_path / "nope.hdf5", "query")


def _data_set(path: Path, *, docs: int = 600, queries: int = 30, dim: int = 8, seed: int = 7) -> np.ndarray:
    """ann-benchmarks' layout; returns the exact top-K neighbours (row numbers) of each query."""
    rng = np.random.default_rng(seed)
    train = rng.random((docs, dim), dtype=np.float32)
    test = rng.random((queries, dim), dtype=np.float32)
    dist = ((test[:, None, :].astype(np.float64) - train[None, :, :]) ** 2).sum(axis=2)
    neighbors = np.argsort(dist, axis=1)[:, :K].astype(np.int32)
    with h5py.File(path, "w") as f:
        f["train"], f["test"], f["neighbors"] = train, test, neighbors
    return neighbors


def test_sources_split_and_build_osb_requests(tmp_path):
    path = tmp_path / "d.hdf5"
    truth = _data_set(path, docs=50, queries=7)
    op = {"name": "q", "operation-type": "vector-search", "index": "vec", "field": "v", "k": K,
          "data_set_format": "hdf5", "data_set_path": str(path), "body": {"_source": False},
          "data_set_corpus": "", "neighbors_data_set_corpus": ""}
    root = tmp_path / "w"
    root.mkdir()
    (root / "workload.json").write_text(json.dumps({"version": 2, "indices": [], "corpora": [], "schedule": [
        {"operation": op, "clients": 2},
        {"operation": {"name": "b", "operation-type": "bulk-vector-data-set", "index": "vec", "field": "v",
                       "bulk_size": 20, "data_set_format": "hdf5", "data_set_path": str(path)}, "clients": 2}]}))
    track = load_track(root, {}, offline=True)
    search, bulk = track.find_challenge(None).tasks()
    first = [json.loads(p["_body_bytes"]) for p in VectorSearchSource(search, 0)]
    second = list(VectorSearchSource(search, 1))
    assert len(first) == 3 and len(second) == 4  # 7 queries: 3 and 3 + the remainder
    assert first[0]["size"] == K and first[0]["_source"] is False and first[0]["query"]["knn"]["v"]["k"] == K
    assert second[0]["neighbors"] == [str(x) for x in truth[3]]
    assert second[0]["request-params"] == {"allow_partial_search_results": "false"}
    bodies = list(BulkVectorSource(bulk, 1))
    assert [b["body"].docs for b in bodies] == [20, 5]  # rows 25..49
    first_line = bodies[0]["body"].body.split(b"\n")[0]
    assert json.loads(first_line) == {"index": {"_index": "vec", "_id": 25}}


@pytest.mark.parametrize("op, message", [
    ({"operation-type": "vector-search", "field": "v", "data_set_format": "csv"}, "data_set_format 'csv'"),
    ({"operation-type": "vector-search", "field": "v", "data_set_format": "hdf5", "data_set_path": "/x",
      "data_set_corpus": "c", "k": 1}, "reads vector data sets from a file only"),
    ({"operation-type": "vector-search", "field": "v", "data_set_format": "hdf5", "data_set_path": "/x", "k": 1},
     "data_set_path '/x', which is not a file"),
    ({"operation-type": "vector-search", "field": "v", "data_set_format": "hdf5", "data_set_path": __file__},
     "needs k"),
    ({"operation-type": "proto-search"}, "gRPC/protobuf"),
    ({"operation-type": "produce-stream-message"}, "Kafka"),
    ({"operation-type": "register-ml-model"}, "ML Commons"),
])
def test_refused_at_load_in_one_line(tmp_path, op, message):
    (tmp_path / "workload.json").write_text(json.dumps({"version": 2, "indices": [], "corpora": [], "schedule": [
        {"operation": {"name": "o", **op}}]}))
    with pytest.raises(TrackError, match=message) as e:
        load_track(tmp_path, {}, offline=True).challenge(None)
    assert "\n" not in str(e.value)


@pytest.fixture(scope="module")
def knn_cluster(tmp_path_factory: pytest.TempPathFactory, local_engines) -> Iterator[ClusterInfo]:
    if not JDK_21_PLUS.is_dir():
        pytest.skip(f"OpenSearch 3.6.0 needs Java 21+; no JDK at {JDK_21_PLUS}")
    zip_path = Path(default_cache()) / "test-plugins" / KNN_ZIP.rsplit("/", 1)[1]
    if not zip_path.is_file():
        zip_path.parent.mkdir(parents=True, exist_ok=True)
        fetch(KNN_ZIP, zip_path, error=ProvisionError, what="the k-NN plugin")
    provisioner, info = local_engines.start_cluster(tmp_path_factory.mktemp("knn"), engine="opensearch",
                                                    version="3.6.0", java_home=JDK_21_PLUS, plugins=[zip_path])
    try:
        yield info
    finally:
        provisioner.stop_all()


def test_vector_search_reports_recall_against_exact_neighbours(tmp_path, knn_cluster):
    data = tmp_path / "vectors.hdf5"
    truth = _data_set(data)
    # The same queries with another query's neighbours (rolled by one row): recall must drop to their overlap.
    wrong = tmp_path / "wrong.hdf5"
    with h5py.File(wrong, "w") as f:
        f["neighbors"] = np.roll(truth, 1, axis=0)
    common = {"operation-type": "vector-search", "index": "vec", "field": "v", "k": K, "data_set_format": "hdf5",
              "data_set_path": str(data), "detailed-results": True, "body": {"_source": False}}
    exact = {"filter_type": "script", "filter_body": {"match_all": {}}, "space_type": "l2"}
    workload = {"version": 2, "indices": [], "corpora": [], "test_procedures": [{"name": "p", "default": True,
        "schedule": [
            {"operation": {"name": "drop", "operation-type": "delete-index", "index": "vec"}},
            {"operation": {"name": "make", "operation-type": "create-index", "index": "vec", "body": {
                "settings": {"index.knn": True, "number_of_shards": 1, "number_of_replicas": 0},
                "mappings": {"properties": {"v": {"type": "knn_vector", "dimension": 8, "method": {
                    "name": "hnsw", "engine": "lucene", "space_type": "l2"}}}}}}},
            {"operation": {"name": "load", "operation-type": "bulk-vector-data-set", "index": "vec", "field": "v",
                           "bulk_size": 100, "data_set_format": "hdf5", "data_set_path": str(data)}, "clients": 2},
            {"operation": {"name": "flush", "operation-type": "refresh", "index": "vec"}},
            {"operation": {"name": "exact", **common, **exact}, "clients": 2},
            {"operation": {"name": "exact-wrong", **common, **exact, "neighbors_data_set_path": str(wrong)}},
            {"operation": {"name": "hnsw", **common}, "clients": 2},
        ]}]}
    root = tmp_path / "w"
    root.mkdir()
    (root / "workload.json").write_text(json.dumps(workload))
    target = knn_cluster.hosts[0].removeprefix("http://")
    assert main(["--quiet", "race", f"--workload-path={root}", f"--target-hosts={target}"]) == 0
    with TrialStore() as store:
        trial_id = store.list_trials()[0].id
        df = store.samples(trial_id)
        summary = stored_summary(store, trial_id)
    assert df["success"].all()
    assert df.loc[df["task"] == "load", "units"].sum() == 600

    def metas(task: str) -> list[dict]:
        return [json.loads(m) for m in df.loc[df["task"] == task, "meta"]]

    exact_meta = metas("exact")
    assert len(exact_meta) == 30 and all(m["hits"] == 600 for m in exact_meta)
    # An exact (brute-force) search finds exactly the neighbours numpy computed: every recall is 1.
    assert [m["recall@k"] for m in exact_meta] == [1.0] * 30
    assert [m["recall@1"] for m in exact_meta] == [1.0] * 30
    # With query i answered and query i-1's neighbours as truth, recall is their overlap over K.
    expected = sorted(len(set(truth[i]) & set(truth[i - 1])) / K for i in range(30))
    assert sorted(m["recall@k"] for m in metas("exact-wrong")) == expected
    # The report's rows, as OSB names them: the mean over the task's requests.
    assert summary is not None
    rows = {(r.task, r.metric): r.value for _, r in summary.labelled_rows() if r.metric.startswith("Mean recall")}
    assert rows[("exact", "Mean recall@k")] == 1.0 and rows[("exact", "Mean recall@1")] == 1.0
    assert rows[("exact-wrong", "Mean recall@k")] == pytest.approx(np.mean(expected), abs=1e-12)
    hnsw = metas("hnsw")
    assert len(hnsw) == 30 and np.mean([m["recall@k"] for m in hnsw]) >= 0.9
    assert all(m["recall_time_ms"] >= 0 for m in hnsw)


def test_point_in_time_settings_and_model_operations(tmp_path, knn_cluster):
    host = knn_cluster.hosts[0]
    target = host.removeprefix("http://")
    pit = {"operation-type": "composite", "requests": [
        {"name": "pit", "operation-type": "create-point-in-time", "index": "pitidx", "keep-alive": "1m"},
        {"operation-type": "list-all-point-in-time"},
        {"operation-type": "paginated-search", "with-point-in-time-from": "pit", "pages": "all",
         "results-per-page": 2, "body": {"query": {"match_all": {}}, "sort": [{"n": "asc"}]}},
        {"operation-type": "delete-point-in-time", "with-point-in-time-from": "pit"}]}
    workload = {"version": 2, "indices": [], "corpora": [], "schedule": [
        {"operation": {"name": "pit", **pit}, "iterations": 3},
        {"operation": {"name": "css", "operation-type": "update-concurrent-segment-search-settings",
                       "enable": "true", "max_slice_count": 2}},
        {"operation": {"name": "no-model-ok", "operation-type": "delete-knn-model", "model_id": "nope",
                       "ignore-if-model-does-not-exist": True}},
        {"operation": {"name": "no-model", "operation-type": "delete-knn-model", "model_id": "nope"}},
    ]}
    root = tmp_path / "w"
    root.mkdir()
    (root / "workload.json").write_text(json.dumps(workload))
    docs = "".join(f'{{"index":{{"_index":"pitidx"}}}}\n{{"n":{n}}}\n' for n in range(5)).encode()
    req = urllib.request.Request(f"{host}/_bulk?refresh=true", data=docs, method="POST",
                                 headers={"Content-Type": "application/x-ndjson"})
    assert not json.loads(urllib.request.urlopen(req).read())["errors"]
    main(["--quiet", "race", f"--workload-path={root}", f"--target-hosts={target}"])
    with TrialStore() as store:
        df = store.samples(store.list_trials()[0].id)
    ok = df.set_index("task")["success"].groupby(level=0).all().to_dict()
    assert ok == {"pit": True, "css": True, "no-model-ok": True,
                  "no-model": False}
    assert len(df[df["task"] == "pit"]) == 3
    settings = json.loads(urllib.request.urlopen(f"{host}/_cluster/settings?flat_settings=true").read())
    assert settings["persistent"]["search.concurrent_segment_search.enabled"] == "true"
    assert settings["persistent"]["search.concurrent.max_slice_count"] == "2"
    pits = json.loads(urllib.request.urlopen(f"{host}/_search/point_in_time/_all").read())
    assert pits["pits"] == []  # each iteration deleted its point in time


WORKLOAD_PY = '''
from opensearchpy import AsyncOpenSearch
from osbenchmark.worker_coordinator.runner import Retry, Runner


class NodeCount(Runner):
    async def __call__(self, opensearch, params):
        assert isinstance(opensearch, AsyncOpenSearch), type(opensearch)
        health = await opensearch.transport.perform_request("GET", "/_cluster/health")
        await opensearch.indices.create(index=params["index"], body={"settings": {"number_of_replicas": 0}})
        await opensearch.index(index=params["index"], body={"n": 1}, refresh=True)
        count = await opensearch.count(index=params["index"])
        return {"weight": 1, "unit": "ops", "nodes": health["number_of_nodes"], "docs": count["count"]}


async def missing(opensearch, params):
    await opensearch.get(index="no-such-index", id="1")


def register(registry):
    registry.register_runner("node-count", Retry(NodeCount()), async_runner=True)
    registry.register_runner("missing", missing, async_runner=True)
'''


def test_workload_runners_get_opensearch_py(tmp_path, knn_cluster):
    root = tmp_path / "w"
    root.mkdir()
    (root / "workload.py").write_text(WORKLOAD_PY)
    (root / "workload.json").write_text(json.dumps({"version": 2, "indices": [], "corpora": [], "schedule": [
        {"operation": {"name": "clean", "operation-type": "delete-index", "index": "osbpy"}},
        {"operation": {"name": "nodes", "operation-type": "node-count", "index": "osbpy"}},
        {"operation": {"name": "gone", "operation-type": "missing"}}]}))
    target = knn_cluster.hosts[0].removeprefix("http://")
    main(["--quiet", "race", f"--workload-path={root}", f"--target-hosts={target}"])
    with TrialStore() as store:
        df = store.samples(store.list_trials()[0].id).set_index("task")
    assert bool(df.loc["nodes", "success"]) and json.loads(df.loc["nodes", "meta"]) == {"nodes": 1, "docs": 1}
    assert not bool(df.loc["gone", "success"]) and df.loc["gone", "error_type"] == "http-404"


def test_recall_section_means_measured_successful_requests():
    import pandas as pd

    from bench.results.vector_recall import recall_section, section_rows

    df = pd.DataFrame({
        "task": ["q", "q", "q", "q", "other"],
        "warmup": [True, False, False, False, False],
        "success": [True, True, True, False, True],
        "meta": ['{"recall@k": 0.0}', '{"recall@k": 0.5, "recall@1": 1.0}', '{"recall@k": 1.0, "recall@1": 0.0}',
                 '{"recall@k": 0.0}', None]})
    section = recall_section(df)
    assert section == {"q": {"recall@k": {"mean": 0.75, "count": 2}, "recall@1": {"mean": 0.5, "count": 2}}}
    assert [(r.metric, r.value) for r in section_rows(section)] == [("Mean recall@k", 0.75), ("Mean recall@1", 0.5)]
    assert recall_section(df[df["task"] == "other"]) is None
