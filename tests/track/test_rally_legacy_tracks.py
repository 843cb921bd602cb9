"""Pre-2018 Rally track forms, in small look-alikes of the shapes of rally-tracks' nested, geopoint, pmc, eventdata and
percolator: read as today's equivalent with one deprecation line per construct, or refused in one line naming the
current form; one raced against the session's real Elasticsearch to show bench does what the track says."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from bench.track.loader import load_track
from bench.trials.sqlite import TrialStore
from bench.util.errors import TrackError
from tests.race.test_race import only_trial, race

INDEX = "bench-legacy-questions"


def _write(root: Path, track: dict[str, Any], files: dict[str, Any] | None = None) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "track.json").write_text(json.dumps(track))
    for name, content in (files or {}).items():
        (root / name).write_text(content if isinstance(content, str) else json.dumps(content))
    return root


def _rally_0x_track(root: Path, *, schedule: list[dict[str, Any]] | None = None, docs: int = 120) -> Path:
    """nested/geopoint/pmc's shape: no version, data-url, documents and mapping on a type, operation-type index,
    challenge index-settings, no index management in the schedule."""
    (root).mkdir(parents=True, exist_ok=True)
    (root / "documents.json").write_text("".join(json.dumps({"title": f"q{i}", "tag": f"t{i % 3}"}) + "\n"
                                                 for i in range(docs)))
    return _write(root, {
        "short-description": "look-alike",
        "data-url": "http://benchmarks.example.invalid/corpora/nested",
        "indices": [{"name": INDEX, "types": [{
            "name": "question", "mapping": "mappings.json", "documents": "documents.json",
            "document-count": docs, "uncompressed-bytes": (root / "documents.json").stat().st_size}]}],
        "operations": [
            {"name": "index-append", "operation-type": "index", "bulk-size": 50},
            {"name": "match-all", "operation-type": "search", "index": INDEX, "body": {"query": {"match_all": {}}}},
        ],
        "challenges": [{
            "name": "append-no-conflicts", "default": True,
            "index-settings": {"index.number_of_replicas": 0, "index.number_of_shards": 2},
            "schedule": schedule or [{"operation": "index-append", "clients": 2},
                                     {"operation": "match-all", "clients": 1, "iterations": 5}],
        }],
    }, {"mappings.json": {"question": {"dynamic": "strict", "properties": {
        "title": {"type": "text"}, "tag": {"type": "keyword"}}}}})


def test_a_rally_0x_track_reads_as_its_current_equivalent_with_one_line_per_construct(tmp_path, capsys):
    folder = _rally_0x_track(tmp_path / "nested")
    track = load_track(folder, {}, check_challenge=True)
    assert track.indices[0].body_content == {"mappings": {"dynamic": "strict", "properties": {
        "title": {"type": "text"}, "tag": {"type": "keyword"}}}}
    (corpus,) = track.corpora
    (doc,) = corpus.documents
    assert (corpus.name, doc.source_file, doc.document_count, doc.target_index, doc.base_url) == (
        INDEX, "documents.json", 120, INDEX, "http://benchmarks.example.invalid/corpora/nested")
    ch = track.challenge(None)
    tasks = ch.tasks()
    assert [t.name for t in tasks] == ["auto-delete-indices", "auto-create-indices", "auto-check-cluster-health",
                                       "index-append", "match-all"]
    assert [t.operation.operation_type for t in tasks[:4]] == ["delete-index", "create-index", "cluster-health",
                                                               "bulk"]
    assert tasks[1].operation.params["settings"] == {"index.number_of_replicas": 0, "index.number_of_shards": 2}
    assert tasks[2].operation.params["request-params"] == {"wait_for_status": "green"}
    assert not any(t.include_in_reporting for t in tasks[:3])
    assert tasks[3].operation.params == {"bulk-size": 50}
    err = capsys.readouterr().err.strip().splitlines()
    file = folder / "track.json"
    assert err == [
        f"bench: warning: {file}: deprecated Rally track form: a mapping keyed by its type is unwrapped for typeless "
        "Elasticsearch/OpenSearch (in indices[0].types[0].mapping (mappings.json))",
        f"bench: warning: {file}: deprecated Rally track form: indices with 'types' objects (Rally 0.x: the index "
        "body is the type's mapping) (in indices[0])",
        f"bench: warning: {file}: deprecated Rally track form: documents declared on an index type, read as corpus "
        f"'{INDEX}' with base-url data-url (in indices[0].types[0])",
        f"bench: warning: {file}: deprecated Rally track form: operation-type 'index' read as 'bulk' (same "
        "parameters; write \"operation-type\": \"bulk\") (in operation 'index-append')",
        f"bench: warning: {file}: deprecated Rally track form: indices declared by 'types' objects are deleted, "
        "created (with the challenge's index-settings) and waited for (cluster health green) before the schedule, "
        "as Rally 0.x did (in 'append-no-conflicts')",
    ]


def test_a_schedule_that_checks_cluster_health_itself_gets_no_extra_check(tmp_path):
    # eventdata's shape: its challenge deletes, creates and waits itself (Rally 0.x still managed the index first).
    folder = _rally_0x_track(tmp_path / "eventdata", schedule=[
        {"operation": "delete-index"}, {"operation": {"operation-type": "create-index"}},
        {"name": "check-cluster-health", "operation": {"operation-type": "cluster-health", "index": INDEX,
                                                       "request-params": {"wait_for_status": "green"}}},
        {"operation": "index-append"}])
    names = [t.name for t in load_track(folder, {}).challenge(None).tasks()]
    assert names == ["auto-delete-indices", "auto-create-indices", "delete-index", "create-index",
                     "check-cluster-health", "index-append"]


def test_type_names_beside_a_body_are_ignored_and_a_typed_body_unwrapped(tmp_path, capsys):
    body = {"settings": {"index.number_of_shards": 1}, "mappings": {"doc": {"properties": {"f": {"type": "long"}}}}}
    spec = {"version": 2, "indices": [{"name": "i", "body": "index.json", "types": ["doc"]}],
            "schedule": [{"operation": {"operation-type": "create-index"}}]}
    track = load_track(_write(tmp_path / "typed", spec, {"index.json": body}), {}, check_challenge=True)
    assert track.indices[0].body_content == {"settings": {"index.number_of_shards": 1},
                                             "mappings": {"properties": {"f": {"type": "long"}}}}
    plain = {"mappings": {"properties": {"f": {"type": "long"}}}}
    track = load_track(_write(tmp_path / "plain", spec, {"index.json": plain}), {}, check_challenge=True)
    assert track.indices[0].body_content == plain
    err = capsys.readouterr().err
    assert err.count("a mapping keyed by its type is unwrapped") == 1
    assert "target-type" not in err
    assert err.count("'types' of an index ignored (typeless Elasticsearch/OpenSearch) (in indices[0])") == 2
    corpus = {"corpora": [{"name": "c", "documents": [{"source-file": "d.json", "document-count": 1,
                                                        "target-type": "doc"}]}]}
    load_track(_write(tmp_path / "corpus", {**spec, **corpus}, {"index.json": plain}), {})
    assert "'target-type' of a corpus ignored (typeless Elasticsearch/OpenSearch: no _type is sent) (in corpora[0])" \
        in capsys.readouterr().err
    # A mapping keyed by some other type than the index declares is not guessed at.
    wrong = {"mappings": {"other": {"properties": {"f": {"type": "long"}}}}}
    with pytest.raises(TrackError, match=r"the mapping is keyed by type\(s\) other, not by the index's type\(s\) doc"):
        load_track(_write(tmp_path / "wrong", spec, {"index.json": wrong}), {})


def test_challenge_index_settings_of_a_current_track_are_ignored_as_rally_does(tmp_path, capsys):
    spec = {"version": 2, "indices": [{"name": "i"}], "challenges": [{
        "name": "c", "index-settings": {"index.number_of_replicas": 0},
        "schedule": [{"operation": {"operation-type": "create-index", "settings": {"index.number_of_replicas": 1}}}]}]}
    ch = load_track(_write(tmp_path / "t", spec), {}).challenge(None)
    assert [t.name for t in ch.tasks()] == ["create-index"]
    assert "'index-settings' of a challenge ignored, as Rally >= 1.0 ignores them" in capsys.readouterr().err


@pytest.mark.parametrize("spec, message", [
    # percolator's shape: two typed mappings for one index
    ({"indices": [{"name": "queries", "types": [{"name": ".percolator", "mapping": "m.json"},
                                                {"name": "content", "mapping": "m.json"}]}],
      "schedule": [{"operation": "refresh"}]},
     "indices[0] ('queries') declares mappings for 2 types (.percolator, content); a typeless Elasticsearch/OpenSearch "
     "index has one mapping: give the index one 'body'"),
    # Rally 0.4's operations: 'type', clients and iterations on the operation
    ({"indices": [{"name": "i"}], "operations": [{"name": "stats", "type": "stats", "clients": {"count": 1}}],
      "schedule": [{"operation": "stats"}]},
     "operations[0] ('stats') has 'type' but no 'operation-type': that is Rally 0.4's track format"),
    ({"version": 1, "indices": [{"name": "i"}], "schedule": [{"operation": "refresh"}]},
     "track format version 1: bench reads Rally's track format version 2"),
    ({"indices": [{"name": "i", "body": "m.json", "types": [{"name": "t", "mapping": "m.json"}]}],
      "schedule": [{"operation": "refresh"}]},
     "indices[0] has both 'body' and 'types' objects"),
])
def test_legacy_forms_bench_cannot_honour_are_one_line(tmp_path, spec, message):
    folder = _write(tmp_path / "t", spec, {"m.json": {"t": {"properties": {}}}})
    with pytest.raises(TrackError) as e:
        load_track(folder, {})
    assert str(e.value).startswith(f"{folder / 'track.json'}: ") and message in str(e.value)
    assert "\n" not in str(e.value)


def test_challenge_cluster_settings_make_the_challenge_unrunnable(tmp_path):
    spec = {"indices": [{"name": "i"}], "challenges": [
        {"name": "a", "default": True, "cluster-settings": {"indices.memory.index_buffer_size": "20%"},
         "schedule": [{"operation": "refresh"}]},
        {"name": "b", "schedule": [{"operation": "refresh"}]}]}
    track = load_track(_write(tmp_path / "t", spec), {})
    assert track.challenge("b").name == "b"
    with pytest.raises(TrackError, match="challenge 'a': 'cluster-settings' on a challenge .* are not applied by "
                                         "bench: set them with a put-settings task or in the car"):
        track.challenge(None)


def _get(host: str, path: str) -> Any:
    with urllib.request.urlopen(f"{host}{path}") as r:
        return json.load(r)


def _no_unplaceable_replicas(host: str) -> None:
    """Rally 0.x waited for the whole cluster to be green. The session cluster has one node, so an index another test
    left with a replica (a metrics store's, say) keeps it yellow and that wait would time out after 30 s: such
    replicas, which this node can never hold, are dropped first."""
    health = _get(host, "/_cluster/health?level=indices&expand_wildcards=all")
    for name, index in health.get("indices", {}).items():
        if index["status"] == "yellow":
            urllib.request.urlopen(urllib.request.Request(
                f"{host}/{name}/_settings?expand_wildcards=all", method="PUT",
                headers={"Content-Type": "application/json"},
                data=json.dumps({"index": {"number_of_replicas": 0}}).encode())).close()
    assert _get(host, "/_cluster/health?wait_for_status=green&timeout=30s")["status"] == "green"


def test_a_rally_0x_track_races_as_rally_0x_ran_it(tmp_path, es_target, es_cluster):
    host = es_cluster.hosts[0]
    _no_unplaceable_replicas(host)
    # An index left over with another mapping and one shard: Rally 0.x deleted it before the challenge.
    request = urllib.request.Request(f"{host}/{INDEX}", method="PUT", headers={"Content-Type": "application/json"},
                                     data=json.dumps({"settings": {"index.number_of_shards": 1,
                                                                   "index.number_of_replicas": 0}}).encode())
    urllib.request.urlopen(request).close()
    folder = _rally_0x_track(tmp_path / "nested")
    assert race(f"--track-path={folder}", f"--target-hosts={es_target}") == 0
    settings = _get(host, f"/{INDEX}/_settings")[INDEX]["settings"]["index"]
    assert (settings["number_of_shards"], settings["number_of_replicas"]) == ("2", "0")
    mapping = _get(host, f"/{INDEX}/_mapping")[INDEX]["mappings"]
    assert mapping == {"dynamic": "strict", "properties": {"tag": {"type": "keyword"}, "title": {"type": "text"}}}
    urllib.request.urlopen(urllib.request.Request(f"{host}/{INDEX}/_refresh", method="POST")).close()
    assert _get(host, f"/{INDEX}/_count")["count"] == 120
    with TrialStore() as store:
        trial = only_trial(store)
        df = store.samples(trial.id)
        summary = store.summary(trial.id)
    assert df[df["task"] == "index-append"]["units"].sum() == 120
    assert summary.failed_requests == 0
    assert summary.task("match-all").failed_requests == 0
    assert set(df["task"]) == {"auto-delete-indices", "auto-create-indices", "auto-check-cluster-health",
                               "index-append", "match-all"}
    # Rally 0.x's wait for green before the schedule: answered green, not timed out
    health = df[df["task"] == "auto-check-cluster-health"]
    assert len(health) == 1 and health["success"].all() and health["service_time"].max() < 10, health.T


def test_bench_info_shows_why_a_challenge_cannot_run(tmp_path, capsys):
    from bench.cli import main

    spec = {"indices": [{"name": "i"}], "challenges": [
        {"name": "a", "default": True, "cluster-settings": {"x": 1}, "schedule": [{"operation": "refresh"}]}]}
    folder = _write(tmp_path / "t", spec)
    assert main(["info", f"--track-path={folder}"]) == 0
    out = capsys.readouterr().out
    assert "no: the challenge itself" in out
    assert f"CANNOT RUN: {folder / 'track.json'}: challenge 'a': 'cluster-settings' on a challenge" in out


def test_a_track_that_runs_its_own_index_operation_keeps_it(tmp_path, capsys):
    folder = _write(tmp_path / "t", {"version": 2, "indices": [{"name": "i"}],
                                     "schedule": [{"operation": {"name": "ix", "operation-type": "index"}}]})
    (folder / "track.py").write_text("async def index(es, params):\n    return None\n\n\n"
                                     "def register(registry):\n"
                                     "    registry.register_runner('index', index, async_runner=True)\n")
    task = load_track(folder, {}, check_challenge=True).challenge(None).tasks()[0]
    assert task.operation.operation_type == "index"
    assert "deprecated" not in capsys.readouterr().err
