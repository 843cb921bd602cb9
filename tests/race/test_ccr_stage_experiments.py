"""The bundled Stage 1 / Stage 2 and several-followers experiments parse into the races they promise: 3-node
OpenSearch pairs with 3 primaries / 1 replica and 8 clients on geopoint, http_logs and pmc (Stage 1), eventdata
(Stage 2), and 0 to 3 followers of one leader; their topologies and the tracks' ccr/baseline challenges exist."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.cloud.topology import load_topology
from bench.race.experiment import load_experiment, plan, race_options
from bench.track.loader import find_track, load_track

ROOT = Path(__file__).resolve().parents[2]


def _races(name: str) -> list:
    exp = load_experiment(name)
    return [(r, race_options(exp, r, run_id="t")) for r in plan(exp, "t")]


def test_stage1_is_three_tracks_on_three_node_pairs() -> None:
    exp = load_experiment("ccr-stage1-opensearch")
    # OpenSearch 2.19.1 refuses soft deletes off: that variant is dropped, soft deletes on is the baseline.
    assert exp.baseline == "soft-deletes-on" and list(exp.variants) == ["soft-deletes-on", "ccr"]
    races = _races("ccr-stage1-opensearch")
    assert len(races) == 3 * 2 * 3  # tracks × variants × repetitions
    assert {o.track for _r, o in races} == {"geopoint", "http_logs", "pmc"}
    for r, o in races:
        assert o.track_params == {"number_of_shards": 3, "number_of_replicas": 1, "bulk_indexing_clients": 8}
        assert o.distribution == "opensearch:2.19.1"
        if r.variant == "ccr":
            topo = load_topology(o.topology)
            assert [(c.name, c.nodes, c.engine, c.version, c.remote_clusters) for c in topo.clusters] == \
                [("leader", 3, "opensearch", "2.19.1", []), ("follower", 3, "opensearch", "2.19.1", ["leader"])]
            assert topo.security and all(c.car == ["defaults", "256mheap", "security"] for c in topo.clusters)
        else:  # security on everywhere, the baselines too, as Stage 1 asks
            assert o.challenge == "baseline" and o.nodes == 3 and o.car == ["defaults", "256mheap", "security"]


def test_stage2_is_eventdata_for_long() -> None:
    races = _races("ccr-stage2-opensearch")
    assert {(o.track, o.challenge) for _r, o in races} == {("eventdata", "baseline"), ("eventdata", "ccr")}
    assert all(o.track_params["doc_count"] == 50_000_000 and o.track_params["number_of_shards"] == 3
               for _r, o in races)


def test_followers_study_is_zero_to_three_followers_of_one_leader() -> None:
    races = [(r, o) for r, o in _races("ccr-followers-opensearch") if r.repetition == 1]
    followers = {}
    for r, o in races:
        topo = load_topology(o.topology) if o.topology else None
        followers[r.variant] = [c.name for c in topo.clusters if c.remote_clusters == ["leader"]] if topo else []
        if topo:
            assert [c.name for c in topo.clusters if not c.remote_clusters] == ["leader"]
    assert followers == {"no-follower": [], "1-follower": ["follower"], "2-followers": ["follower-1", "follower-2"],
                         "3-followers": ["follower-1", "follower-2", "follower-3"]}


@pytest.mark.parametrize("name", ["geopoint", "pmc", "eventdata"])
def test_stage_tracks_have_ccr_and_a_baseline_naming_the_bulk_task_alike(name: str) -> None:
    track = load_track(find_track(name, None), {"number_of_shards": 3, "number_of_replicas": 1})
    bulk = {c: [(t.name, t.operation.params.get("cluster")) for t in track.challenge(c).tasks()
                if t.operation.operation_type == "bulk"] for c in ("ccr", "baseline")}
    assert bulk == {"ccr": [("index-append", "leader")], "baseline": [("index-append", None)]}
    assert track.find_challenge(None).name == "append-no-conflicts"  # the default stays
    settings = (track.indices[0].body_content or {})["settings"]
    assert settings["index.number_of_shards"] == 3 and settings["index.number_of_replicas"] == 1


def test_bundled_copies_are_the_repository_files() -> None:
    for rel in ("topologies/ccr-local-opensearch-3node.yml", "topologies/ccr-local-opensearch-3-followers.yml",
                "experiments/ccr-stage1-opensearch.yml", "car-configs/256mheap.yml"):
        assert (ROOT / "bench" / "_data" / rel).read_text() == (ROOT / rel).read_text()


@pytest.mark.parametrize("cloud", ["aws", "gcp"])
def test_full_size_stage1_pairs_in_the_clouds(cloud: str) -> None:
    topo = load_topology(ROOT / "topologies" / f"ccr-{cloud}-opensearch.yml")
    assert topo.provider == cloud
    assert [(c.name, c.nodes, c.engine, c.version, c.remote_clusters) for c in topo.clusters] == \
        [("leader", 3, "opensearch", "2.19.1", []), ("follower", 3, "opensearch", "2.19.1", ["leader"])]
