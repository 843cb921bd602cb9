"""The CCR drills without a cluster: their pure figures (MB/s, CPU, RPO, RTO), the parameters' one-line errors,
the report rows, and Elasticsearch's bootstrap and promotion sequences against the recorded CCR answers in
../shared/fixtures (no Elasticsearch CCR module can run here)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from bench.ccr.bootstrap import ccr_bootstrap
from bench.ccr.drill_figures import (
    MB,
    FailoverFigures,
    cpu_percent,
    node_totals,
    rate_mb_s,
    recovered_bytes,
    rpo_ops,
    rto_s,
)
from bench.ccr.drill_section import DrillsSection, drill_rows, unmeasured
from bench.ccr.engine import ElasticsearchCcr
from bench.ccr.failover import DrillPoint, drill_of, parse_spec, promote
from bench.driver.runners.core import Context
from bench.driver.samples import RequestSample
from bench.http.client import ClusterTarget, RawHttp
from bench.track.model import Operation, Parallel, Task
from bench.util.errors import TrackError
from tests.support.fixture_server import FixtureServer, fixture, fixture_json

ES = "elasticsearch-ccr"


def _node(cpu_ms: int, tx: int) -> dict[str, Any]:
    return {"process": {"cpu": {"total_in_millis": cpu_ms}}, "transport": {"tx_size_in_bytes": tx}}


def _recovery(index: str, *sizes: int) -> dict[str, Any]:
    # GET <index>/_recovery (a core API, same on both engines): a CCR follower's shards recover from the leader
    # through a SNAPSHOT-type recovery
    return {index: {"shards": [{"id": i, "type": "SNAPSHOT", "stage": "DONE",
                                "index": {"size": {"total_in_bytes": s, "recovered_in_bytes": s}}}
                               for i, s in enumerate(sizes)]}}


# -- the figures ------------------------------------------------------------------------------------------------


def test_figures_from_readings() -> None:
    assert node_totals({"nodes": {"a": _node(1500, 10), "b": _node(500, 30)}}) == (2000, 40)
    assert recovered_bytes(_recovery("f", 3 * MB, MB), "f") == 4 * MB
    assert rate_mb_s(4 * MB, 2.0) == 2.0
    # 3 s of CPU over 2 s of wall time: one and a half cores busy
    assert cpu_percent(1000, 4000, 2.0) == 150.0
    assert rpo_ops(1200, 1000) == 200 and rpo_ops(1000, 1000) == 0
    assert rto_s(10.0, 12.5) == 2.5


def test_figures_refuse_readings_that_do_not_add_up() -> None:
    with pytest.raises(ValueError, match="node b reports no"):
        node_totals({"nodes": {"a": _node(1, 1), "b": {"process": {}}}})
    with pytest.raises(ValueError, match="no shards of f"):
        recovered_bytes({"other": {"shards": []}}, "f")
    with pytest.raises(ValueError, match="recovered_in_bytes"):
        recovered_bytes({"f": {"shards": [{"index": {"size": {}}}]}}, "f")
    assert rate_mb_s(MB, 0.0) is None
    assert cpu_percent(4000, 1000, 2.0) is None  # a node restarted: its counter went back
    assert rpo_ops(900, 1000) == 0  # the follower read after the leader caught up a little
    with pytest.raises(ValueError):
        rto_s(12.0, 11.0)


# -- parameters -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("params", "message"), [
    ({"index": "f", "after-docs": 10, "mode": "explode"}, "mode 'explode': use kill"),
    ({"index": "f"}, "needs after-docs or after-seconds"),
    ({"after-docs": 10}, "needs 'index'"),
    ({"index": "f", "after-seconds": -1}, "after-seconds -1: use a positive number"),
])
def test_failover_parameters_fail_in_one_line(params: dict[str, Any], message: str) -> None:
    with pytest.raises(TrackError, match=message) as e:
        parse_spec("drill", params, "track.json")
    assert "\n" not in str(e.value) and "track.json: task 'drill' (ccr-failover)" in str(e.value)


def _task(name: str, op_type: str, **params: Any) -> Task:
    return Task(name=name, operation=Operation(name=name, operation_type=op_type, params=params))


def test_drill_block_and_its_point() -> None:
    bulk, drill = _task("index", "bulk", **{"bulk-size": 10}), _task("cut", "ccr-failover", index="f")
    assert drill_of(bulk) is None and drill_of(Parallel(tasks=[bulk])) is None
    found = drill_of(Parallel(tasks=[bulk, drill], completed_by="cut"))
    assert found is not None and found[0].name == "cut" and [t.name for t in found[1].tasks] == ["index"]
    assert found[1].completed_by is None  # the drill task is not run, so it cannot complete the block
    with pytest.raises(TrackError, match="indexing task"):
        drill_of(Parallel(tasks=[drill]))

    point = DrillPoint(parse_spec("cut", {"index": "f", "after-docs": 250}), {"index"})

    def sample(task: str, units: int, success: bool = True, failed: int = 0) -> RequestSample:
        return RequestSample(task, task, "bulk", 0, 0.0, 0.0, 0.1, 0.1, units, "docs", 0, success, None, False,
                             failed_units=failed)

    assert point([sample("index", 100), sample("other", 500), sample("index", 100, success=False)]) is False
    assert point([sample("index", 100)]) is False and point.docs == 200
    assert point([sample("index", 100)]) is True and point.reached and point.docs == 300


# -- rows -------------------------------------------------------------------------------------------------------


def test_a_failed_drill_has_no_rows_and_fails_the_race() -> None:
    ok = FailoverFigures(task="cut", mode="kill", cluster="follower", index="f", leader_cluster="leader",
                         leader_index="f", rto_s=1.5, rpo_ops=42, leader_docs_at_cut=1000, follower_docs_after=960)
    failed = ok.model_copy(update={"task": "cut2", "error": "the follower accepted no write within 120 s",
                                   "rto_s": None, "rpo_ops": None})
    section = DrillsSection(failover=[ok, failed])
    rows = {(r.metric, r.task): r.value for r in drill_rows(section.model_dump(mode="json"))}
    assert rows == {("CCR failover RTO", "follower/f (kill)"): 1.5, ("CCR failover RPO", "follower/f (kill)"): 42,
                    ("CCR failover documents lost", "follower/f (kill)"): 40}
    assert unmeasured(section) == ["CCR failover drill cut2 (kill) on follower/f failed: the follower accepted no "
                                   "write within 120 s"]


# -- Elasticsearch, against the recorded answers ----------------------------------------------------------------


async def _with(follower: FixtureServer, leader: FixtureServer, fn: Any) -> Any:
    async with RawHttp(ClusterTarget(name="follower", hosts=[follower.host]), connections=1) as fh, \
            RawHttp(ClusterTarget(name="leader", hosts=[leader.host]), connections=1) as lh:
        return await fn(fh, lh)


def test_elasticsearch_bootstrap_sequence_and_figures() -> None:
    with FixtureServer() as follower, FixtureServer() as leader:
        follower.add("GET", "/_cluster/settings", {"persistent": {}, "transient": {}})
        follower.add("PUT", "/_cluster/settings", {"acknowledged": True})
        follower.add("PUT", "/f/_ccr/follow", fixture(ES, "put_follow.json"))
        stats = fixture_json(ES, "index_ccr_stats.json")
        stats["indices"][0]["index"] = "f"
        follower.add("GET", "/f/_ccr/stats", stats)
        follower.add("GET", "/f/_recovery", _recovery("f", 6 * MB, 2 * MB))
        leader.add_sequence("GET", "/_nodes/stats/process,transport",
                            [{"nodes": {"l0": _node(10_000, 5 * MB)}}, {"nodes": {"l0": _node(10_500, 14 * MB)}}])

        async def go(fh: RawHttp, lh: RawHttp) -> Any:
            ctx = Context(http={"follower": fh, "leader": lh}, default_cluster="follower", indices={"l": None})
            return await ccr_bootstrap(ctx, {"_engine": "elasticsearch", "index": "f", "leader-index": "l",
                                             "chunk-size": "4mb", "max-concurrent-file-chunks": 3})

        res = asyncio.run(_with(follower, leader, go))
        calls = [(m, p) for m, p, _ in follower.requests]
        follow_query = next(q for m, p, q in follower.requests if p == "/f/_ccr/follow")
    assert res.success, res.detail
    assert calls == [("GET", "/_cluster/settings"), ("PUT", "/_cluster/settings"), ("PUT", "/f/_ccr/follow"),
                     ("GET", "/f/_ccr/stats"), ("GET", "/f/_recovery"), ("PUT", "/_cluster/settings")]
    assert follow_query == {"wait_for_active_shards": "1"}
    b = res.meta["bootstrap"] if res.meta else {}
    assert b["settings"] == {"ccr.indices.recovery.chunk_size": "4mb",
                             "ccr.indices.recovery.max_concurrent_file_chunks": 3}
    assert b["recovered_bytes"] == 8 * MB and b["leader_tx_bytes"] == 9 * MB
    assert b["mb_s"] == pytest.approx(8 / b["seconds_to_syncing"])
    assert b["leader_cpu_pct"] == pytest.approx(500 / (b["seconds_to_syncing"] * 1000) * 100)
    assert b["leader_cluster"] == "leader" and b["index"] == "f" and b["leader_index"] == "l"


def test_elasticsearch_bootstrap_restores_settings_when_the_follow_fails() -> None:
    with FixtureServer() as follower, FixtureServer() as leader:
        follower.add("GET", "/_cluster/settings", {"persistent": {"ccr.indices.recovery.chunk_size": "2mb"}})
        follower.add("PUT", "/_cluster/settings", {"acknowledged": True})
        follower.add("PUT", "/f/_ccr/follow", fixture(ES, "no_ccr_module_put_follow_400.json"), status=400)

        async def go(fh: RawHttp, lh: RawHttp) -> Any:
            ctx = Context(http={"follower": fh, "leader": lh}, default_cluster="follower", indices={"l": None})
            return await ccr_bootstrap(ctx, {"_engine": "elasticsearch", "index": "f", "chunk-size": "8mb"})

        res = asyncio.run(_with(follower, leader, go))
        puts = [q for m, p, q in follower.requests if m == "PUT" and p == "/_cluster/settings"]
    assert not res.success and res.error_type == "no-ccr-support" and res.meta is None
    assert len(puts) == 2  # set, then restored to the 2mb it was


def test_elasticsearch_promotion_pauses_closes_unfollows_opens() -> None:
    with FixtureServer() as follower, FixtureServer() as leader:
        follower.add("POST", "/f/_ccr/pause_follow", fixture(ES, "pause_follow.json"))
        follower.add("POST", "/f/_close", {"acknowledged": True})
        follower.add("POST", "/f/_ccr/unfollow", {"acknowledged": True})
        follower.add("POST", "/f/_open", {"acknowledged": True, "shards_acknowledged": True})

        async def go(fh: RawHttp, lh: RawHttp) -> None:
            await promote(ElasticsearchCcr(fh, "follower"), "f")

        asyncio.run(_with(follower, leader, go))
        calls = [(m, p) for m, p, _ in follower.requests]
    assert calls == [("POST", "/f/_ccr/pause_follow"), ("POST", "/f/_close"), ("POST", "/f/_ccr/unfollow"),
                     ("POST", "/f/_open")]
    assert json.loads(fixture(ES, "pause_follow.json")) == {"acknowledged": True}


def test_a_promoted_followers_unknown_lag_is_the_drills_doing_not_a_failure() -> None:
    from bench.ccr.race_hook import CcrHook
    from bench.results.summary import Summary

    lag = "CCR: the lag of follower follower/f is unknown in all of its 2 samples (the follower was absent ...)"
    other = "CCR: the lag of follower follower/g is unknown in all of its 2 samples (the follower was absent ...)"
    ok = FailoverFigures(task="cut", mode="cut-link", cluster="follower", index="f", leader_cluster="leader",
                         leader_index="f", rto_s=1.0, rpo_ops=5)
    hook = CcrHook()
    hook.failovers = [ok]
    out = hook._with_drills(Summary(unmeasured=[lag, other]))
    assert out.unmeasured == [other]  # only the promoted follower's
    hook.failovers = [ok.model_copy(update={"error": "the promotion did not succeed within 120 s"})]
    failed = hook._with_drills(Summary(unmeasured=[lag]))
    assert failed.unmeasured[0] == lag and "promotion did not succeed" in failed.unmeasured[1]
