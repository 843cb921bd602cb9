"""Issue 6 workloads: the shakespeare/eventdata/geopoint/pmc generators and tracks, client-side ids with
conflicts, bulk-size-mb, k6-style random searches, the nginx loadgen-bulk challenge, and 2,000 clients."""

from __future__ import annotations

import hashlib
import io
import json
import urllib.request
from pathlib import Path

import pytest

from bench.cli import main
from bench.driver.bulk.bodies import IdConflicts, prepare_bodies
from bench.driver.param_sources import search_source
from bench.track.generators import generate, generate_file
from bench.track.loader import find_track, load_track
from bench.track.model import DocumentsSpec, Operation, Task
from bench.trials.sqlite import TrialStore
from bench.util.errors import TrackError

NEW = ["shakespeare", "eventdata", "geopoint", "pmc"]


def _gen(name: str, seed: int, count: int) -> bytes:
    b = io.BytesIO()
    generate(name, seed, count, b)
    return b.getvalue()


def _fields(mapping: dict, prefix: str = "") -> set[str]:
    out = set()
    for k, v in mapping.items():
        if "properties" in v:
            out |= _fields(v["properties"], f"{prefix}{k}.")
        else:
            out.add(prefix + k)
    return out


def _doc_fields(doc: dict, prefix: str = "") -> set[str]:
    out = set()
    for k, v in doc.items():
        out |= _doc_fields(v, f"{prefix}{k}.") if isinstance(v, dict) else {prefix + k}
    return out


@pytest.mark.parametrize("name", NEW)
def test_generators_are_deterministic_and_match_the_track_mappings(name):
    a = _gen(name, 3, 2_000)
    assert hashlib.sha256(a).digest() == hashlib.sha256(_gen(name, 3, 2_000)).digest()
    assert _gen(name, 4, 2_000) != a and _gen(name, 3, 3_000).startswith(a)
    track = load_track(find_track(name, None), {}, ignore_unused=False, test_mode=True)
    mapping = track.indices[0].body_content["mappings"]
    assert mapping["dynamic"] == "strict"
    docs = [json.loads(line) for line in a.splitlines()]
    assert len(docs) == 2_000
    allowed = _fields(mapping["properties"])
    assert all(_doc_fields(d) <= allowed for d in docs)
    assert [c.name for c in track.challenges][:1] != []


def test_generated_field_shapes():
    sh = [json.loads(x) for x in _gen("shakespeare", 1, 500).splitlines()]
    assert [d["line_id"] for d in sh] == list(range(1, 501))
    assert all(d["text_entry"] and d["speaker"].isupper() and d["line_number"].count(".") == 2 for d in sh)
    geo = [json.loads(x)["location"] for x in _gen("geopoint", 1, 500).splitlines()]
    assert all(-180 <= lon <= 180 and -90 <= lat <= 90 for lon, lat in geo)
    ev = [json.loads(x) for x in _gen("eventdata", 1, 200).splitlines()]
    assert all(d["@timestamp"].endswith("Z") and len(d["geoip"]["location"]) == 2 for d in ev)
    pmc = [json.loads(x) for x in _gen("pmc", 1, 50).splitlines()]
    assert sum(len(d["body"]) for d in pmc) / 50 > 2_000  # long text articles
    assert len({d["accession"] for d in pmc}) == 50


def _corpus(tmp_path: Path, n: int) -> DocumentsSpec:
    path = generate_file("geopoint", 1, n, tmp_path / "geo.json")
    d = DocumentsSpec(source_file="geo.json", document_count=n, target_index="geo")
    d.local_path = path
    return d


def _pairs(bodies) -> list[tuple[dict, dict]]:
    out = []
    for b in bodies:
        lines = b.body.decode().splitlines()
        out += [(json.loads(a), json.loads(d)) for a, d in zip(lines[::2], lines[1::2])]
    return out


def test_client_side_ids_with_conflicts(tmp_path):
    d = _corpus(tmp_path, 4_000)
    plain = _pairs(prepare_bodies([d], client=1, clients=2, bulk_size=500,
                                  id_conflicts=IdConflicts(probability=0.0)))
    assert [a["index"]["_id"] for a, _ in plain] == [f"{k:010d}" for k in range(2_000, 4_000)]
    pairs = _pairs(prepare_bodies([d], client=0, clients=2, bulk_size=500,
                                  id_conflicts=IdConflicts("random", 25.0, "update", 0.0, seed=3)))
    assert len(pairs) == 2_000
    updates = [(a["update"], doc) for a, doc in pairs if "update" in a]
    indexes = [a["index"]["_id"] for a, _ in pairs if "index" in a]
    assert 0.2 < len(updates) / 2_000 < 0.3
    assert all(set(doc) == {"doc"} and u["_index"] == "geo" for u, doc in updates)
    assert len(set(indexes)) == len(indexes) and set(indexes) <= {f"{k:010d}" for k in range(2_000)}
    assert indexes != sorted(indexes)  # "random": shuffled ids
    seen: set[str] = set()
    for a, _ in pairs:  # a conflict always reuses an id indexed earlier by this client
        op, meta = next(iter(a.items()))
        assert op == "index" or meta["_id"] in seen
        seen.add(meta["_id"])
    recent = _pairs(prepare_bodies([d], client=0, clients=1, bulk_size=1000,
                                   id_conflicts=IdConflicts("sequential", 50.0, "index", 1.0)))
    last = None
    for a, _ in recent:  # recency 1: the conflicting id is the latest one
        if last is not None and a["index"]["_id"] <= last:
            assert a["index"]["_id"] == last
        last = max(last or "", a["index"]["_id"])


def test_bulk_size_mb_cuts_by_bytes(tmp_path):
    d = _corpus(tmp_path, 20_000)
    bodies = prepare_bodies([d], client=0, clients=1, bulk_size=1, bulk_size_bytes=64 * 1024)
    assert sum(b.docs for b in bodies) == 20_000
    action = len(b'{"index":{"_index":"geo"}}\n')
    for b in bodies[:-1]:
        assert b.size - b.docs * action <= 64 * 1024 < b.size - b.docs * action + 45


def test_search_source_random_from_size_clipped():
    op = Operation(name="s", operation_type="search", params={
        "index": "x", "random-from": [0, 10000], "random-size": [0, 500], "max-result-window": 10000,
        "random-match": {"field": "text_entry", "terms": ["love", "death"]}})
    src = search_source(Task(name="s", operation=op), client=0)
    bodies = [json.loads(next(src)["_body_bytes"]) for _ in range(3000)]
    assert all(b["from"] + b["size"] <= 10000 and 0 <= b["size"] < 500 for b in bodies)
    assert max(b["from"] for b in bodies) > 9_000 and len({b["size"] for b in bodies}) > 100
    assert {b["query"]["match"]["text_entry"] for b in bodies} == {"love", "death"}
    bad = Operation(name="s", operation_type="search", params={"random-size": [5, 1]})
    with pytest.raises(TrackError, match=r"random-size must be \[low, high\)"):
        next(search_source(Task(name="s", operation=bad), client=0))


def test_bad_conflict_parameters_fail_at_load(tmp_path):
    track = tmp_path / "t"
    track.mkdir()
    (track / "track.json").write_text(json.dumps({
        "version": 2, "indices": [{"name": "i"}], "corpora": [],
        "operations": [{"name": "b", "operation-type": "bulk", "bulk-size": 10, "conflicts": "always"}],
        "challenges": [{"name": "c", "schedule": [{"operation": "b"}]}]}))
    with pytest.raises(TrackError, match="conflicts 'always': use 'sequential' or 'random'"):
        load_track(track, {}, ignore_unused=False, test_mode=False, check_challenge=True)


# ------------------------------------------------------------------ against a real cluster


def _race(*args: str) -> int:
    return main(["--quiet", "race", "--test-mode", *args])


def _count(base: str, index: str) -> int:
    urllib.request.urlopen(urllib.request.Request(f"{base}/{index}/_refresh", method="POST"), timeout=60).read()
    with urllib.request.urlopen(f"{base}/{index}/_count", timeout=60) as r:
        return json.loads(r.read())["count"]


def _last_summary():
    with TrialStore() as store:
        trial = store.list_trials(1)[0]
        return trial, store.summary(trial.id)


@pytest.mark.cluster
@pytest.mark.parametrize("track, challenge, index, docs", [
    ("eventdata", "append-no-conflicts", "elasticlogs", 1000),
    ("pmc", "append-no-conflicts", "pmc", 1000),
    ("geopoint", "update", "osmgeopoints", None),
])
def test_classic_tracks_in_test_mode(track, challenge, index, docs, es_target, es_cluster):
    assert _race(f"--track={track}", f"--challenge={challenge}", f"--target-hosts={es_target}") == 0
    trial, summary = _last_summary()
    assert trial.status == "complete" and all(t.error_rate == 0 for t in summary.tasks)
    n = _count(es_cluster.hosts[0], index)
    if docs is not None:
        assert n == docs
    else:  # ~25% of the documents were updates of earlier ids
        assert 600 < n < 900


@pytest.mark.cluster
def test_nginx_loadgen_bulk_challenge(es_target, es_cluster):
    assert _race("--track=nginx", "--challenge=loadgen-bulk", f"--target-hosts={es_target}",
                 "--track-params=loadgen_clients:4,bulk_size:200,time_period:3",
                 "--client-options=http_compress:true") == 0
    _trial, summary = _last_summary()
    task = summary.task("loadgen-bulk")
    assert task.error_rate == 0 and task.units > 0 and task.units % 200 == 0  # whole bulks of 200 documents
    base = es_cluster.hosts[0]
    assert _count(base, "nginx") == task.units
    q = json.dumps({"size": 500, "aggs": {"lo": {"min": {"field": "batch_number"}},
                                           "hi": {"max": {"field": "batch_number"}}}}).encode()
    req = urllib.request.Request(f"{base}/nginx/_search", data=q, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as r:
        body = json.loads(r.read())
    # runtime_variables: one sequence value per request, shared by the 4 clients of the worker process
    assert body["aggregations"]["lo"]["value"] == 1 and body["aggregations"]["hi"]["value"] == task.units / 200
    for h in body["hits"]["hits"]:
        s = h["_source"]
        assert h["_id"] == s["id"] and h["_routing"] == s["routing_no"]  # runtime_body_line_variables
        assert s["message"].startswith(s["ip"] + " - - [")


@pytest.mark.cluster
def test_two_thousand_search_clients_in_one_process(es_target):
    """Shakespeare many-clients: 2,000 concurrent clients in one worker process, test mode (10 s, unthrottled).

    Unthrottled, 2,000 clients can outnumber what one node queues (1,000 shard searches), so the cluster may
    answer some with HTTP 429; what must never happen is a request bench failed to send or to read."""
    assert _race("--track=shakespeare", "--challenge=many-clients", f"--target-hosts={es_target}",
                 "--track-params=doc_count:1000") == 0
    trial, summary = _last_summary()
    task = summary.task("many-clients-search")
    assert trial.status == "complete"
    assert task.requests >= 2000  # every client sent
    assert task.unanswered_requests == 0, task.errors_by_type  # no bench-side failure
    assert set(task.errors_by_type) <= {"http-429"}, task.errors_by_type  # only the cluster's rejections
    assert sum(task.errors_by_type.values()) == task.failed_requests
    k6 = task.k6
    assert k6["failed_pct"] == pytest.approx(task.error_rate * 100)
    assert k6["data_received_mb"] > 0 and k6["data_sent_mb"] > 0
    assert k6["duration_min"] <= k6["duration_med"] <= k6["duration_p90"] <= k6["duration_p95"] <= k6["duration_max"]


@pytest.mark.cluster
def test_two_thousand_paced_clients_ramped_up_run_clean(es_target):
    """The challenge as designed (paced, clients ramped up over the warmup), shortened: 2,000 clients, 250
    requests/s in all, 8 s ramp-up within an 8 s warmup, 8 s measured. Every request succeeds."""
    assert main(["--quiet", "race", "--track=shakespeare", "--challenge=many-clients", f"--target-hosts={es_target}",
                 "--track-params=doc_count:1000,warmup_time_period:8,ramp_up_time_period:8,time_period:8,"
                 "target_throughput:250"]) == 0
    trial, summary = _last_summary()
    task = summary.task("many-clients-search")
    assert trial.status == "complete"
    assert task.failed_requests == 0 and task.errors_by_type == {}, task.errors_by_type
    # Each client sends every 8 s: one measured request per client, all 2,000 of them.
    assert task.requests >= 1900 and task.warmup_requests >= 1900
    assert task.throughput is not None and 150 <= task.throughput.mean <= 300
