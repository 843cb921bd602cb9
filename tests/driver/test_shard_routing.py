"""Client-side shard prediction checked against a real Elasticsearch: every document is found on the shard predicted
(``_search?preference=_shards:N``), for plain ids, custom routing, explicit routing shards and a partitioned index."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from elasticsearch import Elasticsearch, helpers

from bench.driver.bulk.shard_routing import IndexRouting, routing_hash, routing_of

pytestmark = pytest.mark.timeout(300)


def test_the_hash_is_the_engines_murmur3() -> None:
    # Elasticsearch's Murmur3HashFunctionTests vectors (UTF-16 code units, seed 0)
    assert routing_hash("hell") & 0xFFFFFFFF == 0x5A0CB7C3
    assert routing_hash("hello") & 0xFFFFFFFF == 0xD7C31989
    assert routing_hash("The quick brown fox jumps over the lazy dog") & 0xFFFFFFFF == 0xE07DB09C
    assert routing_hash("hello") == 0xD7C31989 - (1 << 32)  # a signed Java int


@pytest.fixture
def es(es_target: str) -> Iterator[Elasticsearch]:
    with Elasticsearch(f"http://{es_target.split(',')[0]}") as client:
        yield client


def _actual_shards(es: Elasticsearch, index: str, shards: int) -> dict[str, int]:
    found: dict[str, int] = {}
    for n in range(shards):
        res = es.search(index=index, preference=f"_shards:{n}", size=10_000, source=False)
        for hit in res["hits"]["hits"]:
            assert hit["_id"] not in found
            found[hit["_id"]] = n
    return found


CASES = {
    "ids, default routing shards": ({"number_of_shards": 7}, None, False),
    "ids, explicit routing shards": ({"number_of_shards": 3, "number_of_routing_shards": 48}, None, False),
    "custom routing": ({"number_of_shards": 5}, 13, False),
    "partitioned": ({"number_of_shards": 6, "routing_partition_size": 3}, 29, True),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_document_lands_on_the_predicted_shard(case: str, es: Elasticsearch) -> None:
    settings, routings, partitioned = CASES[case]
    index = "routing-" + case.replace(" ", "-").replace(",", "")
    es.options(ignore_status=404).indices.delete(index=index)
    body: dict = {"settings": {**settings, "number_of_replicas": 0}}
    if partitioned:
        body["mappings"] = {"_routing": {"required": True}}
    es.indices.create(index=index, **body)
    docs = [(f"doc-{i}-ü{i * 7919}", f"user{i % routings}" if routings else None) for i in range(400)]
    helpers.bulk(es, ({"_index": index, "_id": i, **({"_routing": r} if r else {}), "n": k}
                      for k, (i, r) in enumerate(docs)), refresh=True)
    meta = es.cluster.state(metric="metadata", index=index)["metadata"]["indices"][index]
    routing = routing_of(index, meta)
    assert routing.number_of_shards == settings["number_of_shards"]
    actual = _actual_shards(es, index, routing.number_of_shards)
    predicted = {i: routing.shard(i, r) for i, r in docs}
    assert actual == predicted
    assert len(set(predicted.values())) == routing.number_of_shards  # every shard got documents: a real check
    es.indices.delete(index=index)


def test_content_routed_indices_are_refused() -> None:
    meta = {"settings": {"index": {"number_of_shards": "2", "mode": "time_series", "routing_path": ["host"]}}}
    with pytest.raises(ValueError, match="routes documents by their content"):
        routing_of("tsdb", meta)


def test_routing_factor_maps_routing_shards_onto_shards() -> None:
    r = IndexRouting(index="i", number_of_shards=2, routing_num_shards=8)
    assert r.routing_factor == 4
    assert {r.shard(f"id{i}") for i in range(100)} == {0, 1}


def test_a_body_follows_the_node_holding_most_of_its_documents() -> None:
    from bench.driver.bulk.bodies import BulkBody
    from bench.driver.bulk.routed_bodies import RoutedBody, node_for
    from bench.driver.bulk.routing_watch import RoutingWatch
    from bench.driver.bulk.shard_routing import ShardTable

    routing = IndexRouting(index="i", number_of_shards=3, routing_num_shards=3)
    table = ShardTable(routing=routing, primary_urls={0: "http://a", 1: "http://a", 2: "http://b"}, id_prefix="p-")
    body = RoutedBody(BulkBody(b"", 10, 0, False), "http://a", ((0, 6), (1, 4)))
    assert node_for(body.shards, table.primary_urls) == "http://a"
    watch = RoutingWatch(table, None, 1.0)
    assert watch.node(body) == "http://a"
    assert watch.update({0: "http://a", 1: "http://a", 2: "http://b"}) == []
    # shard 0 (6 of the 10 documents) moves to c: the body goes where most of its documents are
    assert watch.update({0: "http://c", 1: "http://a", 2: "http://b"}) == ["shard 0: http://a -> http://c"]
    assert watch.node(body) == "http://c"
    assert watch.moves == 1


@pytest.mark.parametrize("interval", [-1, "soon", True])
def test_a_bad_refresh_interval_is_refused(interval: object) -> None:
    from bench.driver.param_sources import shard_aware_problem
    from bench.track.model import Operation, Task

    task = Task(name="t", operation=Operation(name="b", operation_type="bulk",
                                              params={"shard-aware": True, "routing-refresh-interval": interval}))
    problem = shard_aware_problem(task)
    assert problem is not None and "routing-refresh-interval" in problem
