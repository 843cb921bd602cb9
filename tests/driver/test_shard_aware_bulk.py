"""Shard-aware bulk on a real 3-node Elasticsearch that bench starts: every document is sent to the node holding its
shard's primary (nodes do not forward documents to each other, as they do with round-robin bulks), and lands on the
shard predicted from its client-side id."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.driver.bulk.shard_routing import IndexRouting
from tests.track.test_track_code import race, samples, write

pytestmark = [pytest.mark.timeout(600), pytest.mark.usefixtures("local_engines")]  # bench starts the 3 nodes

DOCS = 3000
SHARDS = 6

TRACK_PY = '''
async def pressure(es, params):
    stats = await es.nodes.stats(metric="transport")
    tx = {node["name"]: node["transport"]["tx_size_in_bytes"] for node in stats["nodes"].values()}
    return {"weight": 1, "unit": "ops", "tx": tx}


async def placement(es, params):
    index = params["index"]
    meta = (await es.cluster.state(metric="metadata", index=index))["metadata"]["indices"][index]
    shards = {}
    for n in range(int(meta["settings"]["index"]["number_of_shards"])):
        res = await es.search(index=index, preference=f"_shards:{n}", size=10000, source=False)
        shards[n] = [h["_id"] for h in res["hits"]["hits"]]
    return {"weight": 1, "unit": "ops", "routing_num_shards": meta["routing_num_shards"], "shards": shards}


async def exclude(es, params):
    """Move every primary of an index off the node holding most of them, while a shard-aware bulk runs."""
    import asyncio
    import time

    index = params["index"]
    await asyncio.sleep(params["after"])
    table = (await es.cluster.state(metric="routing_table", index=index))["routing_table"]["indices"][index]
    held = {}
    for copies in table["shards"].values():
        for c in copies:
            if c["primary"]:
                held[c["node"]] = held.get(c["node"], 0) + 1
    node_id = max(held, key=held.get)
    node = (await es.nodes.info(node_id=node_id, metric="http"))["nodes"][node_id]
    started = time.time()
    await es.indices.put_settings(index=index, settings={"index.routing.allocation.exclude._name": node["name"]})
    await es.cluster.health(index=index, wait_for_no_relocating_shards=True, timeout="60s")
    table = (await es.cluster.state(metric="routing_table", index=index))["routing_table"]["indices"][index]
    still = [s for s, copies in table["shards"].items() for c in copies if c["primary"] and c["node"] == node_id]
    return {"weight": 1, "unit": "ops", "url": "http://" + node["http"]["publish_address"].rsplit("/", 1)[-1],
            "started": started, "done": time.time(), "still_there": still}


def register(registry):
    registry.register_runner("pressure", pressure, async_runner=True)
    registry.register_runner("placement", placement, async_runner=True)
    registry.register_runner("exclude", exclude, async_runner=True)
'''


def shard_aware_track(root: Path) -> Path:
    docs = "".join(json.dumps({"n": i, "msg": f"message {i}"}) + "\n" for i in range(DOCS))
    index = {"settings": {"index.number_of_shards": SHARDS, "index.number_of_replicas": 0}}
    bulk = {"operation-type": "bulk", "bulk-size": 200}
    return write(root, {
        "track.py": TRACK_PY, "docs.json": docs, "index.json": index,
        "track.json": {
            "indices": [{"name": "plain", "body": "index.json"}, {"name": "routed", "body": "index.json"},
                        {"name": "moving", "body": "index.json"}],
            "corpora": [
                {"name": "test-shard-aware-plain", "documents": [{"source-file": "docs.json", "document-count": DOCS,
                                                                  "target-index": "plain"}]},
                {"name": "test-shard-aware-routed", "documents": [{"source-file": "docs.json",
                                                                   "document-count": DOCS, "target-index": "routed"}]},
                {"name": "test-shard-aware-moving", "documents": [{"source-file": "docs.json",
                                                                   "document-count": DOCS, "target-index": "moving"}]},
            ],
            "schedule": [
                {"operation": {"operation-type": "delete-index"}},
                {"operation": {"operation-type": "create-index"}},
                {"operation": {"operation-type": "cluster-health",
                               "request-params": {"wait_for_status": "green"}}},
                {"name": "before", "operation": {"name": "p0", "operation-type": "pressure"}},
                {"name": "round-robin", "operation": {**bulk, "corpora": "test-shard-aware-plain"}, "clients": 2},
                {"name": "between", "operation": {"name": "p1", "operation-type": "pressure"}},
                {"name": "shard-aware", "operation": {**bulk, "corpora": "test-shard-aware-routed",
                                                      "shard-aware": True}, "clients": 2},
                {"name": "after", "operation": {"name": "p2", "operation-type": "pressure"}},
                {"operation": {"operation-type": "refresh"}},
                {"name": "where", "operation": {"name": "w", "operation-type": "placement", "index": "routed"}},
                # Primaries move while a slow shard-aware bulk runs: its routing watch (every 0.3 s) sends the
                # next bulks to the nodes now holding them.
                {"parallel": {"tasks": [
                    {"name": "moving-bulk", "operation": {"operation-type": "bulk", "bulk-size": 20,
                                                          "corpora": "test-shard-aware-moving", "shard-aware": True,
                                                          "routing-refresh-interval": 0.3},
                     "clients": 2, "target-throughput": 12},
                    {"name": "exclude", "operation": {"name": "x", "operation-type": "exclude", "index": "moving",
                                                      "after": 2}},
                ]}},
                {"name": "refresh-moving", "operation": {"operation-type": "refresh"}},
                {"name": "where-moved", "operation": {"name": "wm", "operation-type": "placement",
                                                      "index": "moving"}},
            ],
        },
    })


def _sent(a: dict, b: dict) -> int:
    return sum(b["tx"][n] - a["tx"][n] for n in b["tx"])


def test_shard_aware_bulk_goes_to_the_primarys_node(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    track = shard_aware_track(tmp_path / "sharded")
    rc, err = race(capsys, f"--track-path={track}", "--nodes=3")
    assert rc == 0, err
    df = samples()

    def meta(task: str) -> dict:
        return json.loads(df[df["task"] == task]["meta"].iloc[0])

    routed = df[df["task"] == "shard-aware"]
    assert routed["success"].all() and routed["units"].sum() == DOCS
    # Bytes the nodes sent each other while each bulk task ran: round-robin bulks are forwarded to the nodes of
    # the primaries (about 2/3 of the documents on 3 nodes); shard-aware ones are not, leaving only the cluster's
    # own chatter.
    plain = _sent(meta("before"), meta("between"))
    aware = _sent(meta("between"), meta("after"))
    doc_bytes = DOCS * len(json.dumps({"n": 1000, "msg": "message 1000"}))
    assert plain > doc_bytes / 2, (plain, aware)
    assert aware < plain / 5, (plain, aware)

    where = meta("where")
    routing = IndexRouting(index="routed", number_of_shards=SHARDS, routing_num_shards=where["routing_num_shards"])
    placed = {doc_id: int(shard) for shard, ids in where["shards"].items() for doc_id in ids}
    assert len(placed) == DOCS
    assert all(routing.shard(doc_id) == shard for doc_id, shard in placed.items())

    # The moving index: every document arrived, and once the primaries had left the excluded node (plus one
    # refresh interval and a request in flight), no bulk went there any more; before, some did.
    moving = df[df["task"] == "moving-bulk"]
    assert moving["success"].all() and moving["units"].sum() == DOCS
    moved = meta("exclude")
    assert moved["still_there"] == []
    nodes = moving["meta"].map(lambda m: json.loads(m)["node"])
    before = nodes[moving["absolute_time"] < moved["started"]]
    after = nodes[moving["absolute_time"] > moved["done"] + 1.0]
    assert (before == moved["url"]).any(), (moved, before.value_counts())
    assert len(after) > 0 and not (after == moved["url"]).any(), (moved, after.value_counts())
    assert sum(len(ids) for ids in meta("where-moved")["shards"].values()) == DOCS
