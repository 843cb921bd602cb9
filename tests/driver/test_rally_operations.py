"""Rally's operation types beyond the core ones, raced against the session's real Elasticsearch: templates and data
streams, snapshots, paged searches, point in time and async search inside composite operations, shrink, and the
operations this Elasticsearch cannot do (counted failures carrying the cluster's message)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from bench.track.loader import load_track
from bench.trials.sqlite import TrialStore
from bench.util.errors import TrackError
from tests.race.test_race import only_trial, race


def _get(host: str, path: str) -> Any:
    with urllib.request.urlopen(f"{host}{path}") as r:
        return json.load(r)


def _status(host: str, path: str) -> int:
    try:
        with urllib.request.urlopen(urllib.request.Request(f"{host}{path}")) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def _track(root: Path, spec: dict[str, Any], files: dict[str, Any] | None = None) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "track.json").write_text(json.dumps({"version": 2, "description": "test", **spec}))
    for name, content in (files or {}).items():
        (root / name).write_text(content if isinstance(content, str) else json.dumps(content))
    return root


def _op(name: str, op_type: str, **params: Any) -> dict[str, Any]:
    return {"operation": {"name": name, "operation-type": op_type, **params}}


def _docs(path: Path, n: int) -> Path:
    path.write_text("".join(json.dumps({"@timestamp": f"2024-01-01T00:{i // 60:02d}:{i % 60:02d}Z", "n": i,
                                        "tag": f"t{i % 5}"}) + "\n" for i in range(n)))
    return path


def _run(track: Path, es_target: str, rc: int = 0) -> tuple[Any, Any, Any]:
    # rc 4: a task whose every request failed (on purpose here) is 'not measured' (docs: exit codes)
    assert race(f"--track-path={track}", f"--target-hosts={es_target}") == rc
    with TrialStore() as store:
        trial = only_trial(store)
        return trial, store.samples(trial.id), store.summary(trial.id)


def _task(df: Any, name: str) -> Any:
    rows = df[df["task"] == name]
    assert len(rows) == 1, f"{name}: {len(rows)} samples"
    return rows.iloc[0]


def test_templates_data_stream_and_bulk_into_it(tmp_path, es_target, es_cluster):
    host = es_cluster.hosts[0]
    track = _track(tmp_path / "ds", {
        # template-path: the body sits under that key of the file (as in k8s_metrics)
        "component-templates": [{"name": "bench-ct-mappings", "template": "ct.json",
                                 "template-path": "component_template"}],
        "composable-templates": [{"name": "bench-logs", "index-pattern": "bench-logs-*", "template": "it.json"}],
        "data-streams": [{"name": "bench-logs-app"}],
        # no target-data-stream: Rally sends the documents to the track's only data stream
        "corpora": [{"name": "c", "documents": [{"source-file": str(_docs(tmp_path / "d.json", 120)),
                                                  "document-count": 120}]}],
        "schedule": [
            _op("drop-ds", "delete-data-stream"),
            _op("drop-it", "delete-composable-template"),
            _op("drop-ct", "delete-component-template"),
            _op("ct", "create-component-template"),
            _op("it", "create-composable-template", settings={"number_of_replicas": 0}),
            _op("ds", "create-data-stream"),
            {**_op("load", "bulk", **{"bulk-size": 40}), "clients": 1},
            _op("refresh", "refresh", index="bench-logs-app"),
            # search's data-stream names its target (a missing one answers 404, so the parameter was used)
            _op("ds-search", "search", **{"data-stream": "no-such-stream"}, body={"query": {"match_all": {}}}),
            _op("legacy", "create-index-template", template="bench-legacy",
                body={"index_patterns": ["bench-legacy-*"], "settings": {"number_of_shards": 1}}),
            _op("legacy-drop", "delete-index-template", template="bench-legacy"),
        ]}, {
        "ct.json": {"component_template": {"template": {"mappings": {"properties": {
            "@timestamp": {"type": "date"}, "n": {"type": "long"}, "tag": {"type": "keyword"}}}}}},
        "it.json": {"index_patterns": ["bench-logs-*"], "data_stream": {}, "composed_of": ["bench-ct-mappings"],
                    "priority": 500, "template": {"settings": {"number_of_shards": 1}}},
    })
    trial, df, summary = _run(track, es_target, rc=4)
    # This integ-test zip has no data streams module: its REST API is missing, so create-data-stream fails
    # like any request, counted, with the cluster's answer -- and the race goes on.
    ds = summary.task("ds")
    assert ds.failed_requests == 1 and ds.error_messages[0].message.startswith(
        "the cluster lacks data streams: needs the x-pack-data-streams module")
    assert ds.error_messages[0].message.split(" — ", 1)[1].startswith("HTTP 405: ")
    assert "/_data_stream/bench-logs-app" in ds.error_messages[0].message
    ds_search = summary.task("ds-search")
    assert ds_search.failed_requests == 1
    assert ds_search.error_messages[0].message == "HTTP 404: index_not_found_exception: no such index [no-such-stream]"
    assert summary.failed_requests == 2, [t.error_messages for t in summary.tasks]
    # each create/delete weighs the objects it touched
    assert _task(df, "ct")["units"] == 1 and _task(df, "it")["units"] == 1
    assert _task(df, "legacy-drop")["units"] == 1
    # bulk into the data stream: 'create' actions, which the server's own data stream support auto-creates from
    # the composable template
    load = df[df["task"] == "load"]
    assert load["units"].sum() == 120 and load["success"].all() and len(load) == 3
    resolved = _get(host, "/_resolve/index/bench-logs-app")["data_streams"]
    assert resolved[0]["name"] == "bench-logs-app"
    assert resolved[0]["backing_indices"][0].startswith(".ds-bench-logs-app-")
    assert _get(host, "/bench-logs-app/_count")["count"] == 120
    # the composable template got the operation's settings merged in, and composes the component template
    it = _get(host, "/_index_template/bench-logs")["index_templates"][0]["index_template"]
    assert it["composed_of"] == ["bench-ct-mappings"]
    assert it["template"]["settings"]["index"]["number_of_replicas"] == "0"
    assert _get(host, "/_component_template/bench-ct-mappings")["component_templates"][0]["name"] == \
        "bench-ct-mappings"
    assert _status(host, "/_template/bench-legacy") == 404


def test_snapshot_restore_and_recovery_into_an_fs_repository(tmp_path, es_target, es_cluster):
    host = es_cluster.hosts[0]
    repo_body = {"type": "fs", "settings": {"location": "bench-test-repo"}}  # relative: under the nodes' path.repo
    track = _track(tmp_path / "snap", {
        "indices": [{"name": "snapped", "body": "idx.json"}],
        "corpora": [{"name": "c", "documents": [{"source-file": str(_docs(tmp_path / "d.json", 200)),
                                                  "document-count": 200, "target-index": "snapped"}]}],
        "schedule": [
            _op("drop-repo", "delete-snapshot-repository", repository="r1"),
            _op("del", "delete-index"), _op("create", "create-index"),
            {**_op("load", "bulk", **{"bulk-size": 100}), "clients": 1},
            _op("refresh", "refresh", index="snapped"),
            _op("repo", "create-snapshot-repository", repository="r1", body=repo_body),
            _op("snap", "create-snapshot", repository="r1", snapshot="s1",
                body={"indices": "snapped", "include_global_state": False}),
            _op("wait-snap", "wait-for-snapshot-create", repository="r1", snapshot="s1"),
            _op("wait-all", "wait-for-current-snapshots-create", repository="r1"),
            _op("del-again", "delete-index"),
            _op("restore", "restore-snapshot", repository="r1", snapshot="s1", body={"indices": "snapped"}),
            _op("recovery", "wait-for-recovery", index="snapped"),
            _op("drop-repo-end", "delete-snapshot-repository", repository="r1"),
        ]}, {"idx.json": {"settings": {"number_of_shards": 1, "number_of_replicas": 0}}})
    trial, df, summary = _run(track, es_target)
    assert summary.failed_requests == 0, [t.error_messages for t in summary.tasks]
    snap = _task(df, "wait-snap")
    assert snap["unit"] == "byte" and snap["units"] > 1000  # the snapshot's size, Rally's weight
    rec = _task(df, "recovery")
    assert rec["unit"] == "byte" and rec["units"] > 1000
    assert _get(host, "/snapped/_count")["count"] == 200
    assert _status(host, "/_snapshot/r1") == 404


@pytest.fixture
def search_track(tmp_path):
    def make(schedule: list[dict]) -> Path:
        return _track(tmp_path / "search", {
            "indices": [{"name": "pages", "body": "idx.json"}],
            "corpora": [{"name": "c", "documents": [{"source-file": str(_docs(tmp_path / "d.json", 100)),
                                                      "document-count": 100, "target-index": "pages"}]}],
            "schedule": [_op("del", "delete-index"), _op("create", "create-index"),
                         {**_op("load", "bulk", **{"bulk-size": 100}), "clients": 1},
                         _op("refresh", "refresh", index="pages"), *schedule]},
            {"idx.json": {"settings": {"number_of_shards": 2, "number_of_replicas": 0},
                          "mappings": {"properties": {"n": {"type": "long"}, "tag": {"type": "keyword"}}}}})
    return make


def test_paged_searches_weigh_their_pages(search_track, es_target, es_cluster):
    agg = {"size": 0, "aggs": {"by_tag": {"composite": {"sources": [{"tag": {"terms": {"field": "tag"}}}]}}}}
    track = search_track([
        # 100 hits, 30 a page: 30, 30, 30, 10, then the empty page that ends the scroll (Rally counts it)
        _op("scroll", "scroll-search", pages="all", **{"results-per-page": 30}),
        # search_after stops once pages * 30 >= 100 hits: 4 pages
        # Rally's older scroll: a search with pages
        _op("old-scroll", "search", pages=2, **{"results-per-page": 30}),
        _op("paginated", "paginated-search", pages=10, body={"sort": [{"n": "asc"}]}, **{"results-per-page": 30}),
        _op("paginated-capped", "paginated-search", pages=2, body={"sort": [{"n": "asc"}]},
            **{"results-per-page": 30}),
        # 5 tags, 2 buckets a page: 2, 2, 1, then a page with no buckets and no after_key
        _op("composite-agg", "composite-agg", body=agg, **{"results-per-page": 2}),
        _op("caps", "field-caps", index="pages", fields="n,tag"),
        _op("nodes", "node-stats"),
        _op("shrink", "shrink-index", **{"source-index": "pages", "target-index": "pages-shrunk",
                                         "target-body": {"settings": {"index.number_of_shards": 1,
                                                                      "index.number_of_replicas": 0}}}),
    ])
    trial, df, summary = _run(track, es_target)
    assert summary.failed_requests == 0, [t.error_messages for t in summary.tasks]
    for task, pages in (("scroll", 5), ("old-scroll", 2), ("paginated", 4), ("paginated-capped", 2), ("composite-agg", 4)):
        row = _task(df, task)
        assert (row["unit"], row["units"]) == ("pages", pages), task
    assert _task(df, "caps")["success"] and _task(df, "nodes")["success"]
    host = es_cluster.hosts[0]
    assert _get(host, "/pages-shrunk/_settings")["pages-shrunk"]["settings"]["index"]["number_of_shards"] == "1"
    assert _get(host, "/pages-shrunk/_count")["count"] == 100
    assert _get(host, "/_nodes/stats/indices/search")  # the cluster still answers
    scrolls = sum(n["indices"]["search"]["scroll_current"]
                  for n in _get(host, "/_nodes/stats/indices/search")["nodes"].values())
    assert scrolls == 0  # every scroll was cleared


def test_composite_operation_runs_streams_with_point_in_time_and_async_search(search_track, es_target, es_cluster):
    composite = {"requests": [
        {"name": "pit", "operation-type": "open-point-in-time", "index": "pages"},
        {"stream": [{"name": "after", "operation-type": "paginated-search", "with-point-in-time-from": "pit",
                     "index": "pages", "pages": "all", "results-per-page": 40, "body": {"sort": [{"n": "asc"}]}}]},
        {"stream": [{"name": "agg", "operation-type": "composite-agg", "with-point-in-time-from": "pit",
                     "index": "pages", "body": {"size": 0, "aggs": {"t": {"composite": {"sources": [
                         {"tag": {"terms": {"field": "tag"}}}]}}}}},
                    {"name": "pause", "operation-type": "sleep", "duration": 0.05}]},
        {"name": "close", "operation-type": "close-point-in-time", "with-point-in-time-from": "pit"},
        {"name": "plain", "operation-type": "search", "index": "pages", "body": {"query": {"match_all": {}}}},
    ]}
    async_search = {"requests": [
        {"name": "async", "operation-type": "submit-async-search", "index": "pages",
         "body": {"query": {"term": {"tag": "t1"}}}},
        {"name": "poll", "operation-type": "get-async-search", "retrieve-results-for": "async"},
        {"name": "drop", "operation-type": "delete-async-search", "delete-results-for": ["async"]},
    ]}
    track = search_track([
        {**_op("composite", "composite", **composite), "iterations": 3},
        # async search is an x-pack module this integ-test zip lacks: the composite fails with the cluster's answer
        _op("async", "composite", **async_search),
        # outside a composite operation there is nothing to hand the id to: Rally refuses it, so does bench
        _op("lonely-pit", "open-point-in-time", index="pages"),
        # streams run side by side; a request after them waits for both; max-connections bounds what is in flight
        _op("side-by-side", "composite", requests=[
            {"stream": [{"name": "a", "operation-type": "sleep", "duration": 0.4}]},
            {"stream": [{"name": "b", "operation-type": "sleep", "duration": 0.4}]},
            {"name": "after", "operation-type": "sleep", "duration": 0.1}]),
        _op("one-at-a-time", "composite", **{"max-connections": 1}, requests=[
            {"stream": [{"name": "a", "operation-type": "sleep", "duration": 0.4}]},
            {"stream": [{"name": "b", "operation-type": "sleep", "duration": 0.4}]}]),
        # a failing request fails its composite with the cluster's message
        _op("broken", "composite", requests=[{"name": "bad", "operation-type": "search", "index": "no-such-index",
                                              "body": {}}]),
    ])
    # 'broken' fails every time on purpose: the race is 'not measured' for it (exit 4)
    assert race(f"--track-path={track}", f"--target-hosts={es_target}") == 4
    with TrialStore() as store:
        trial = only_trial(store)
        df, summary = store.samples(trial.id), store.summary(trial.id)
    comp = df[df["task"] == "composite"]
    assert len(comp) == 3 and comp["success"].all() and (comp["units"] == 1).all()
    assert 0.5 <= _task(df, "side-by-side")["service_time"] < 0.85
    assert _task(df, "one-at-a-time")["service_time"] >= 0.8
    lonely = summary.task("lonely-pit")
    assert lonely.failed_requests == 1 and "only allowed inside a composite" in lonely.error_messages[0].message
    failed_async = summary.task("async")
    assert failed_async.failed_requests == 1
    # this build has no async search, and the message says so before the engine's answer
    assert failed_async.error_messages[0].message.startswith("the cluster lacks async search: needs the "
                                                             "x-pack-async-search module")
    assert "— async: HTTP 400: {'error': 'no handler found for uri [/pages/_async_search" in \
        failed_async.error_messages[0].message
    broken = summary.task("broken")
    assert broken.failed_requests == 1
    assert "bad: HTTP 404: index_not_found_exception" in broken.error_messages[0].message
    stats = _get(es_cluster.hosts[0], "/_nodes/stats/indices/search")["nodes"].values()
    assert sum(n["indices"]["search"].get("point_in_time_current", 0) for n in stats) == 0  # every PIT closed


def test_operations_this_cluster_lacks_fail_counted_with_its_message(tmp_path, es_target):
    track = _track(tmp_path / "missing", {"schedule": [
        _op("pipeline", "put-pipeline", id="p1", body={"processors": [{"set": {"field": "x", "value": 1}}]}),
        _op("esql", "esql", query="FROM pages | LIMIT 1"),
        _op("ilm", "create-ilm-policy", **{"policy-name": "p", "body": {"policy": {"phases": {}}}}),
        _op("ml", "create-ml-job", **{"job-id": "j", "body": {"analysis_config": {}}}),
        _op("transform", "create-transform", **{"transform-id": "t", "body": {"source": {"index": "x"}}}),
        # what the cluster has still runs: poll until a value of an answer meets the criterion
        _op("until", "run-until", path="/_cluster/health", **{"json-path": "number_of_nodes",
                                                              "criterion": {"operator": "gte", "value": 1}}),
    ]})
    trial, df, summary = _run(track, es_target, rc=4)
    for task, lacks, answer in (
            ("pipeline", "the ingest processor set: needs the ingest-common module",
             "HTTP 400: parse_exception: No processor type exists with name [set]"),
            ("esql", "ES|QL: needs the x-pack-esql module",
             "HTTP 405: {'error': 'Incorrect HTTP method for uri [/_query] and method [POST]"),
            ("ilm", "index lifecycle management: needs the x-pack-ilm module",
             "HTTP 400: {'error': 'no handler found for uri [/_ilm/policy/p] and method [PUT]'"),
            ("ml", "machine learning: needs the x-pack-ml module",
             "HTTP 400: {'error': 'no handler found for uri [/_ml/anomaly_detectors/j]"),
            ("transform", "transforms: needs the x-pack-transform module",
             "HTTP 405: {'error': 'Incorrect HTTP method for uri [/_transform/t?defer_validation=false]")):
        t = summary.task(task)
        message = t.error_messages[0].message
        # what the cluster lacks first (bench.driver.missing_feature), then the engine's own answer
        assert t.failed_requests == 1 and message.startswith(f"the cluster lacks {lacks}"), t.error_messages
        assert message.split(" — ", 1)[1].startswith(answer), t.error_messages
    assert summary.task("until").failed_requests == 0 and _task(df, "until")["success"]
    assert trial.status == "complete"


@pytest.mark.parametrize(("op", "needle"), [
    ({"operation-type": "put-pipeline", "body": {}}, "needs the parameter 'id'"),
    ({"operation-type": "create-snapshot", "repository": "r", "snapshot": "s"}, "needs the parameter 'body'"),
    ({"operation-type": "shrink-index", "source-index": "a", "target-index": "b", "target-body": []},
     "target-body []: use a JSON object"),
    ({"operation-type": "composite-agg", "body": {"aggs": {}}}, "exactly one composite aggregation"),
    ({"operation-type": "paginated-search", "pages": 0}, "pages 0: use a positive integer or 'all'"),
    ({"operation-type": "create-ilm-policy", "policy-name": "p", "body": {"phases": {}}}, "top-level 'policy'"),
    ({"operation-type": "composite", "requests": [{"operation-type": "bulk"}]}, "which a composite cannot run"),
    ({"operation-type": "composite", "requests": [{"stream": [{"operation-type": "open-point-in-time"}]}]},
     "needs the parameter 'name'"),
    ({"operation-type": "composite", "requests": [{"name": "x"}]}, "needs 'stream' or 'operation-type'"),
    ({"operation-type": "run-until", "path": "/", "json-path": "a", "criterion": {"operator": "gt"}},
     "its operator must be one of"),
    ({"operation-type": "wait-for-transform"}, "needs the parameter 'transform-id'"),
    ({"operation-type": "search", "detailed-results": "maybe"}, "operation 'op' (search): operation parameter 'detailed-results' is 'maybe'"),
    ({"operation-type": "sql", "body": {}}, "(sql) needs body.query"),
])
def test_mandatory_parameters_are_checked_when_the_track_loads(tmp_path, op, needle):
    track = _track(tmp_path / "bad", {"schedule": [{"operation": {"name": "op", **op}}]})
    with pytest.raises(TrackError) as e:
        load_track(track, {}, check_challenge=True)
    assert needle in str(e.value)


def test_a_template_path_the_file_lacks_is_a_load_error(tmp_path):
    track = _track(tmp_path / "tp", {
        "composable-templates": [{"name": "t", "index-pattern": "x-*", "template": "t.json",
                                  "template-path": "index_template"}],
        "schedule": [_op("it", "create-composable-template")]}, {"t.json": {"template": {}}})
    with pytest.raises(TrackError, match=r"composable-templates\[0\].*t.json has no 'index_template'"):
        load_track(track, {})


def test_opensearch_creates_data_streams_and_serves_point_in_time(tmp_path, os_cluster):
    # OpenSearch's zip has data streams in its core (the Elasticsearch integ-test zip has not) and its own point in
    # time API: one OpenSearch node for what only it can show.
    track = _track(tmp_path / "os", {
        "component-templates": [{"name": "os-ct", "template": "ct.json"}],
        "composable-templates": [{"name": "os-it", "index-pattern": "os-logs-*", "template": "it.json"}],
        "data-streams": [{"name": "os-logs-app"}],
        "corpora": [{"name": "c", "documents": [{"source-file": str(_docs(tmp_path / "d.json", 100)),
                                                  "document-count": 100}]}],
        "schedule": [
            _op("ct", "create-component-template"), _op("it", "create-composable-template"),
            _op("ds", "create-data-stream"),
            {**_op("load", "bulk", **{"bulk-size": 50}), "clients": 1},
            _op("refresh", "refresh", index="os-logs-app"),
            _op("pit", "composite", requests=[
                {"name": "pit", "operation-type": "open-point-in-time", "index": "os-logs-app"},
                {"name": "after", "operation-type": "paginated-search", "with-point-in-time-from": "pit",
                 "index": "os-logs-app", "pages": "all", "results-per-page": 40, "body": {"sort": [{"n": "asc"}]}},
                {"name": "close", "operation-type": "close-point-in-time", "with-point-in-time-from": "pit"}]),
            _op("drop-ds", "delete-data-stream"),
        ]}, {
        "ct.json": {"template": {"mappings": {"properties": {"n": {"type": "long"}, "tag": {"type": "keyword"}}}}},
        "it.json": {"index_patterns": ["os-logs-*"], "data_stream": {}, "composed_of": ["os-ct"], "priority": 500},
    })
    # The session's OpenSearch (tests/conftest.py): the race deletes the data stream it makes and closes its PIT.
    host = os_cluster.hosts[0]
    target = ",".join(h.removeprefix("http://") for h in os_cluster.hosts)
    # seen before the data stream is deleted: a second race would find it gone
    trial, df, summary = _run(track, target)
    pits = _get(host, "/_search/point_in_time/_all").get("pits", [])
    streams = _get(host, "/_data_stream").get("data_streams", [])
    assert summary.failed_requests == 0, [t.error_messages for t in summary.tasks]
    assert _task(df, "ds")["units"] == 1 and _task(df, "drop-ds")["units"] == 1
    assert df[df["task"] == "load"]["units"].sum() == 100
    assert _task(df, "pit")["success"] and pits == [] and streams == []
