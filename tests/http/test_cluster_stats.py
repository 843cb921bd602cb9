"""Cluster totals parsed from real `_stats` answers (recorded from ES 8.19.21, see data/recorded/README.md),
and read live from a real cluster started with tests/support/esnode.py."""

from __future__ import annotations

import asyncio
import json
import urllib.request
from pathlib import Path

import pytest

from bench.http.cluster_stats import (
    JVM_GC_PATH,
    STATS_METRICS,
    ClusterTotals,
    GcTotals,
    cluster_totals,
    delta,
    fetch_cluster_totals,
    gc_delta,
    gc_totals,
    primary_shard_spread,
)
from bench.util.errors import ClusterError

RECORDED = Path(__file__).parents[1] / "data" / "recorded"


def load(name: str) -> dict:
    return json.loads((RECORDED / name).read_text())


def test_parse_recorded_stats_after_indexing():
    c = cluster_totals(load("es-8.19.21-stats-after-indexing.json"), cluster="default")
    p = c.primaries
    assert c.cluster == "default"
    assert (p.index_total, p.index_time_ms, p.index_throttle_time_ms) == (20000, 2823, 0)
    assert (p.merge_total, p.merge_time_ms, p.merge_throttle_time_ms) == (2, 436, 0)
    assert (p.refresh_total, p.refresh_time_ms) == (26, 1187)
    assert (p.flush_total, p.flush_time_ms) == (2, 34)
    assert (p.store_size_bytes, p.segment_count, p.docs_count) == (468660, 2, 20000)
    # 0 replicas: all copies are primaries.
    assert c.total == c.primaries


def test_parse_cluster_without_indices_is_all_zero():
    c = cluster_totals(load("es-8.19.21-stats-no-indices.json"))
    assert c == ClusterTotals()


def test_answer_without_all_section_is_a_clear_error():
    with pytest.raises(ClusterError, match="leader.*_all") as e:
        cluster_totals({"error": "nope"}, cluster="leader")
    assert "\n" not in str(e.value)


def test_delta_subtracts_counters_and_keeps_gauges():
    before = cluster_totals(load("es-8.19.21-stats-after-indexing.json"))
    after = cluster_totals(load("es-8.19.21-stats-after-more-indexing.json"))
    d = delta(before, after)
    assert d.primaries.index_total == 5000  # one more bulk of 5,000 docs
    assert d.primaries.index_time_ms == after.primaries.index_time_ms - before.primaries.index_time_ms
    assert d.primaries.refresh_total == after.primaries.refresh_total - before.primaries.refresh_total
    # Gauges are the state at the end.
    assert d.primaries.docs_count == 25000
    assert d.primaries.segment_count == after.primaries.segment_count
    assert d.total.store_size_bytes == after.total.store_size_bytes


def _jvm(*nodes: tuple[int, int, int, int]) -> dict:
    """A ``_nodes/stats/jvm?filter_path=nodes.*.jvm.gc.collectors`` answer, shaped as Elasticsearch gives it."""
    return {"nodes": {f"n{i}": {"jvm": {"gc": {"collectors": {
        "young": {"collection_count": yc, "collection_time_in_millis": yt},
        "old": {"collection_count": oc, "collection_time_in_millis": ot}}}}}
        for i, (yc, yt, oc, ot) in enumerate(nodes)}}


def test_gc_totals_sum_nodes_and_delta_survives_a_restart():
    before = gc_totals(_jvm((10, 100, 1, 50), (20, 300, 0, 0)))
    assert before == GcTotals(young_count=30, young_time_ms=400, old_count=1, old_time_ms=50)
    after = gc_totals(_jvm((15, 160, 1, 50), (25, 350, 2, 80)))
    assert gc_delta(before, after) == GcTotals(young_count=10, young_time_ms=110, old_count=2, old_time_ms=80)
    restarted = gc_totals(_jvm((2, 10, 0, 0)))
    assert gc_delta(before, restarted) == restarted
    assert gc_totals({}) == GcTotals() and gc_totals({"nodes": {"x": {}}}) == GcTotals()


def test_recorded_shard_stats_give_the_spread_across_primary_shards():
    spread = primary_shard_spread(load("es-8.19.21-shard-stats.json"))
    # 4 primaries: nginx/0 and shards-rec/0..2 (see data/recorded/README.md).
    assert (spread["index_time_ms"].min, spread["index_time_ms"].median, spread["index_time_ms"].max) == \
        (184, 415.0, 1673)
    assert (spread["refresh_time_ms"].min, spread["refresh_time_ms"].max) == (90, 588)
    assert spread["merge_time_ms"].max == 0
    # Replica copies are left out; no indices, no spread.
    replica = {"indices": {"i": {"shards": {"0": [{"routing": {"primary": False},
                                                   "indexing": {"index_time_in_millis": 99999}}]}}}}
    assert primary_shard_spread(replica) == {} and primary_shard_spread({}) == {}


def test_recorded_jvm_answer_gives_gc_totals():
    gc = gc_totals(load("es-8.19.21-nodes-stats-jvm-gc.json"))
    assert gc == GcTotals(young_count=9, young_time_ms=153, old_count=0, old_time_ms=0)


def test_delta_after_counter_reset_uses_after_value():
    # The index was deleted during the race: counters drop to zero and start again.
    before = cluster_totals(load("es-8.19.21-stats-after-more-indexing.json"))
    after = cluster_totals(load("es-8.19.21-stats-after-indexing.json"))
    assert delta(before, after).primaries.index_total == after.primaries.index_total
    empty = cluster_totals(load("es-8.19.21-stats-no-indices.json"))
    assert delta(before, empty).primaries.index_total == 0


def test_fetch_cluster_totals_unreachable_cluster_is_cluster_error():
    from elasticsearch import AsyncElasticsearch

    async def run():
        client = AsyncElasticsearch("http://127.0.0.1:9", request_timeout=5, max_retries=0)
        try:
            await fetch_cluster_totals(client, "default")
        finally:
            await client.close()

    with pytest.raises(ClusterError, match="cluster default: GET _stats") as e:
        asyncio.run(run())
    assert "\n" not in str(e.value)


@pytest.mark.cluster
def test_fetch_cluster_totals_from_real_cluster(es_cluster):
    # The session cluster is shared: assert on differences, which only this test's indexing makes.
    from elasticsearch import AsyncElasticsearch

    async def run(hosts):
        client = AsyncElasticsearch(hosts, request_timeout=30)
        try:
            await client.options(ignore_status=404).indices.delete(index="stats-test")
            await client.indices.create(index="stats-test", settings={"number_of_shards": 1,
                                                                      "number_of_replicas": 0})
            # Documents an earlier test left unrefreshed would otherwise show up in the doc count mid-test.
            await client.indices.refresh(index="_all")
            before = await fetch_cluster_totals(client, "default")
            ops = []
            for i in range(50):
                ops += [{"index": {"_index": "stats-test"}}, {"n": i}]
            await client.bulk(operations=ops, refresh=True)
            await client.indices.flush(index="stats-test")
            raw = (await client.indices.stats(metric=STATS_METRICS)).body
            after = await fetch_cluster_totals(client, "default")
            return before, after, raw
        finally:
            await client.close()

    before, after, raw = asyncio.run(run(es_cluster.hosts))
    assert after.primaries.docs_count - before.primaries.docs_count == 50
    assert after.primaries.index_total - before.primaries.index_total == 50
    assert after.primaries.flush_total >= 1 and after.primaries.segment_count >= 1
    assert after.total.store_size_bytes > 0 and after.total.translog_size_bytes > 0
    with urllib.request.urlopen(es_cluster.hosts[0] + JVM_GC_PATH, timeout=30) as r:
        gc = gc_totals(json.loads(r.read()))
    assert gc.young_count > 0 and gc.young_time_ms >= 0  # a started node has collected its young generation
    assert delta(before, after).primaries.index_total == 50
    assert cluster_totals(raw).primaries.docs_count == after.primaries.docs_count
