"""ccr-stats: parsing and lag on the recorded answers of both APIs (../shared/fixtures), the device against a
replay server of those recordings, and a live test when BENCH_CCR_LEADER / BENCH_CCR_FOLLOWER are set."""

from __future__ import annotations

import asyncio
import copy
import json
import os
from urllib.parse import urlsplit

import pytest

from bench.http.client import ClientOptions, ClusterTarget, check_cluster
from bench.telemetry.ccr_models import (
    NOT_IN_PROGRESS,
    CheckpointHistory,
    es_sync_state,
    os_sync_state,
    parse_autofollow_stats,
    parse_ccr_stats,
    parse_follower_stats,
    parse_index_ccr_stats,
    parse_leader_stats,
    parse_replication_status,
)
from bench.telemetry.ccr_stats import CcrStats, configured_indices
from bench.telemetry.device import TelemetryContext
from bench.telemetry.runner import TelemetryRunner
from bench.telemetry.section import summarize_telemetry
from bench.trials.sqlite import TelemetryRow, TrialStore
from bench.util.errors import ClusterError
from tests.support.fixture_server import FixtureServer, fixture, fixture_json, fixture_status

ES, OS = "elasticsearch-ccr", "opensearch-replication"


# -- Elasticsearch answers ---------------------------------------------------------------------------------


def test_es_ccr_stats_lag_per_shard_and_index():
    stats = parse_ccr_stats(fixture_json(ES, "ccr_stats.json"))
    [index] = stats.follow_stats.indices
    assert index.index == "follower_index" and index.total_global_checkpoint_lag == 256
    [shard] = index.shards
    assert shard.lag_ops == 1024 - 768 and index.lag_ops == 256
    assert shard.operations_read == 896 and shard.operations_written == 832 and shard.time_since_last_read_millis == 8
    assert shard.follower_aliases_version == 8  # unknown-to-the-model fields are kept, not dropped
    state = es_sync_state(stats)
    assert not state.in_sync and state.lag_ops == {"follower_index": 256} and "256 operations" in state.reason


def test_es_7x_shape_derives_index_lag_from_shards():
    stats = parse_ccr_stats(fixture_json(ES, "ccr_stats_7x_shape.json"))
    [index] = stats.follow_stats.indices
    assert index.total_global_checkpoint_lag is None
    assert index.lag_ops == 256


def test_es_index_ccr_stats_answer():
    stats = parse_index_ccr_stats(fixture_json(ES, "index_ccr_stats.json"))
    assert es_sync_state(stats, ["follower_index"]).lag_ops == {"follower_index": 256}


def test_paused_follower_vanishing_is_never_in_sync():
    stats = parse_ccr_stats(fixture_json(ES, "ccr_stats_paused_follower_vanished.json"))
    assert stats.follow_stats.indices == []
    named = es_sync_state(stats, ["follower_index"])
    assert not named.in_sync and named.missing == ["follower_index"] and "no follower checkpoints" in named.reason
    assert not es_sync_state(stats).in_sync  # nothing named, nothing found: still not "in sync"


def test_caught_up_follower_is_in_sync():
    body = fixture_json(ES, "ccr_stats.json")
    for idx in body["follow_stats"]["indices"]:
        idx["total_global_checkpoint_lag"] = 0
        for s in idx["shards"]:
            s["follower_global_checkpoint"] = s["leader_global_checkpoint"]
    assert es_sync_state(parse_ccr_stats(body), ["follower_index"]).in_sync


def test_unexpected_answer_is_a_one_line_error():
    with pytest.raises(ClusterError, match="_ccr/stats: unexpected answer at 'follow_stats.indices.0.shards.0"):
        body = fixture_json(ES, "ccr_stats.json")
        del body["follow_stats"]["indices"][0]["shards"][0]["follower_global_checkpoint"]
        parse_ccr_stats(body)
    with pytest.raises(ClusterError, match="expected a JSON object"):
        parse_ccr_stats("<html>")


# -- OpenSearch answers ------------------------------------------------------------------------------------


@pytest.mark.parametrize("name, status, lag", [
    ("status_initial.json", "SYNCING", 0),
    ("status_lagging.json", "SYNCING", 2000),
    ("status_caught_up.json", "SYNCING", 0),
    ("status_multi_shard.json", "SYNCING", 0),  # -2/-2: an empty 2-shard index, sums over shards
    ("status_immediately_after_start_no_wait.json", "RUNNING", None),
    ("status_paused.json", "PAUSED", None),
    ("status_not_replicated.json", NOT_IN_PROGRESS, None),
    ("status_after_stop.json", NOT_IN_PROGRESS, None),
])
def test_os_status_lag(name, status, lag):
    st = parse_replication_status(fixture_json(OS, name))
    assert st.status == status and st.lag_ops == lag


def test_os_sync_state_unknown_is_not_in_sync():
    lagging = parse_replication_status(fixture_json(OS, "status_lagging.json"))
    caught_up = parse_replication_status(fixture_json(OS, "status_caught_up.json"))
    no_details = parse_replication_status(fixture_json(OS, "status_immediately_after_start_no_wait.json"))
    paused = parse_replication_status(fixture_json(OS, "status_paused.json"))
    assert os_sync_state({"follower-01": caught_up}).in_sync
    assert os_sync_state({"follower-01": lagging}).lag_ops == {"follower-01": 2000}
    for unknown in (no_details, paused):
        s = os_sync_state({"follower-01": caught_up, "follower-02": unknown})
        assert not s.in_sync and s.missing == ["follower-02"]
    assert not os_sync_state({}).in_sync


def test_os_stats_endpoints():
    f = parse_follower_stats(fixture_json(OS, "follower_stats.json"))
    assert f.num_syncing_indices == 1 and f.index_stats["follower-01"].operations_written == 2005
    assert f.failed_read_requests == 0 and f.leader_checkpoint == f.follower_checkpoint == 2004
    leader = parse_leader_stats(fixture_json(OS, "leader_stats.json"))
    assert leader.index_stats["leader-01"].translog_size_bytes == 159690
    auto = parse_autofollow_stats(fixture_json(OS, "autofollow_stats.json"))
    assert [r.name for r in auto.autofollow_stats] == ["logs-rule"] and auto.num_success_start_replication == 1
    assert parse_autofollow_stats(fixture_json(OS, "autofollow_stats_empty.json")).autofollow_stats == []


# -- time lag ----------------------------------------------------------------------------------------------


def test_time_lag_from_checkpoint_history():
    h = CheckpointHistory()
    assert h.time_lag(5, 0.0) is None
    h.add(0.0, 100)
    h.add(10.0, 200)
    h.add(20.0, 200)
    # the leader moved past 150 at t = 5.1 (interpolated): at t = 20 the follower is 14.9 s behind
    lag = h.time_lag(150, 20.0)
    assert lag is not None and lag.seconds == pytest.approx(14.9) and not lag.lower_bound
    assert h.time_lag(200, 20.0).seconds == 0.0
    early = h.time_lag(50, 20.0)  # behind the oldest leader checkpoint seen: at least 20 s
    assert early.lower_bound and early.seconds == pytest.approx(20.0)
    h.add(21.0, 3)  # the leader restarted: history starts again
    assert h.time_lag(3, 21.0).seconds == 0.0


def test_configured_indices_forms():
    assert configured_indices(None, "f") is None
    assert configured_indices(["a", "b"], "f") == ["a", "b"]
    assert configured_indices({"f": ["a"], "g": ["b"]}, "f") == ["a"]
    assert configured_indices({"g": ["b"]}, "f") is None


# -- the device against replayed answers ---------------------------------------------------------------------


def _ctx(srv: FixtureServer, engine: str = "elasticsearch") -> TelemetryContext:
    return TelemetryContext(targets={"follower": ClusterTarget(name="follower", hosts=[srv.host])},
                            clusters={"follower": {"name": "follower", "engine": engine, "version": "8.19.21"}})


async def _samples(device: CcrStats, times: list[float]):
    await device.open()
    try:
        return [await device.sample("follower", t) for t in times]
    finally:
        await device.close()


def _values(sampled, node: str, metric: str) -> list[float]:
    return [r.value for r in sampled.rows if r.node == node and r.metric == metric]


def test_es_device_lagging_caught_up_then_paused():
    lagging = fixture_json(ES, "ccr_stats.json")
    caught_up = copy.deepcopy(lagging)
    caught_up["follow_stats"]["indices"][0]["total_global_checkpoint_lag"] = 0
    caught_up["follow_stats"]["indices"][0]["shards"][0]["follower_global_checkpoint"] = 1024
    with FixtureServer() as srv:
        srv.add_sequence("GET", "/_ccr/stats", [fixture(ES, "ccr_stats.json"), json.dumps(caught_up),
                                                 fixture(ES, "ccr_stats_paused_follower_vanished.json")])
        first, second, paused = asyncio.run(_samples(CcrStats({}, _ctx(srv)), [100.0, 110.0, 120.0]))
    assert _values(first, "follower_index", "lag_ops") == [256.0]
    assert _values(first, "follower_index[0]", "lag_ops") == [256.0]
    assert _values(first, "follower_index[0]", "operations_written") == [832.0]
    [shard_doc] = [r.raw for r in first.rows if r.metric == "shard"]
    assert shard_doc == fixture_json(ES, "ccr_stats.json")["follow_stats"]["indices"][0]["shards"][0]
    assert first.errors == []
    assert _values(second, "follower_index", "lag_ops") == [0.0]
    assert _values(second, "follower_index", "lag_seconds") == [0.0]
    # the follower vanished: recorded as missing and as an error, and no lag at all (certainly not 0)
    assert _values(paused, "follower_index", "missing") == [1.0]
    assert _values(paused, "follower_index", "lag_ops") == []
    assert any("absent" in e and "not zero" in e for e in paused.errors)


def test_es_device_named_indices_and_fatal_exception():
    body = fixture_json(ES, "index_ccr_stats.json")
    body["indices"][0]["fatal_exception"] = {"type": "illegal_state_exception", "reason": "leader index deleted"}
    with FixtureServer() as srv:
        srv.add("GET", "/follower_index,other/_ccr/stats", body)
        [s] = asyncio.run(_samples(CcrStats({"ccr-stats-indices": {"follower": ["follower_index", "other"]}},
                                            _ctx(srv)), [1.0]))
        assert srv.requests[0][2] == {"ignore_unavailable": "true"}
    assert _values(s, "follower_index", "fatal_exceptions") == [1.0]
    assert any("leader index deleted" in e for e in s.errors)
    assert _values(s, "other", "missing") == [1.0]


def test_os_device_lag_from_status_and_stats():
    with FixtureServer() as srv:
        for name, endpoint in (("follower_stats.json", "follower_stats"), ("leader_stats.json", "leader_stats"),
                               ("autofollow_stats.json", "autofollow_stats")):
            srv.add("GET", f"/_plugins/_replication/{endpoint}", fixture(OS, name))
        srv.add_sequence("GET", "/_plugins/_replication/follower-01/_status",
                         [fixture(OS, "status_lagging.json"), fixture(OS, "status_caught_up.json")])
        lagging, caught_up = asyncio.run(_samples(CcrStats({}, _ctx(srv, "opensearch")), [0.0, 2.0]))
    assert _values(lagging, "follower-01", "lag_ops") == [2000.0]
    assert _values(lagging, "follower-01", "operations_written") == [2005.0]  # from follower_stats.index_stats
    assert _values(lagging, "leader-01", "leader.translog_size_bytes") == [159690.0]
    assert _values(lagging, "", "autofollow.num_success_start_replication") == [1.0]
    assert _values(caught_up, "follower-01", "lag_ops") == [0.0]
    assert _values(caught_up, "follower-01", "lag_seconds") == [0.0]
    assert set(lagging.raw) == {"follower_stats", "leader_stats", "autofollow_stats", "status"}


def test_os_device_paused_is_a_state_and_not_replicating_an_error_neither_is_sync():
    with FixtureServer() as srv:
        for name, endpoint in (("follower_stats.json", "follower_stats"), ("leader_stats.json", "leader_stats"),
                               ("autofollow_stats_empty.json", "autofollow_stats")):
            srv.add("GET", f"/_plugins/_replication/{endpoint}", fixture(OS, name))
        srv.add("GET", "/_plugins/_replication/follower-02/_status", fixture(OS, "status_paused.json"))
        srv.add("GET", "/_plugins/_replication/no-such-index/_status", fixture(OS, "status_not_replicated.json"))
        [s] = asyncio.run(_samples(CcrStats({"ccr-stats-indices": ["follower-02", "no-such-index"]},
                                            _ctx(srv, "opensearch")), [0.0]))
    assert _values(s, "follower-02", "paused") == [1.0] and _values(s, "follower-02", "lag_ops") == []
    assert _values(s, "no-such-index", "missing") == [1.0]
    # paused is what the follower is (its row says so), not a problem of the sample; a vanished one is
    assert not any("follower-02" in e for e in s.errors)
    assert any("no-such-index is absent" in e for e in s.errors)


def test_runner_counts_failures_of_a_cluster_without_ccr_and_summary_reports_lag():
    ok_store_rows: list[TelemetryRow] = []
    with FixtureServer() as srv:
        srv.add("GET", "/_ccr/stats", fixture(ES, "no_ccr_module_get_ccr_stats_405.json"),
                status=fixture_status(ES, "no_ccr_module_get_ccr_stats_405.json"))

        async def run() -> TelemetryRunner:
            runner = TelemetryRunner([CcrStats({"ccr-stats-sample-interval": 0.1}, _ctx(srv))], ok_store_rows.extend)
            await runner.start()
            await asyncio.sleep(0.5)
            await runner.stop()
            return runner

        runner = asyncio.run(run())
    samples, failed = runner.counts[("ccr-stats", "follower")]
    assert samples >= 3 and failed == samples  # every attempt failed, and the device kept trying
    marks = [r for r in ok_store_rows if r.metric == "_sample"]
    assert len(marks) == samples and all(r.value == 0 and "HTTP 405" in r.raw["error"] for r in marks)

    # a lagging then caught-up follower, through the store, into the summary
    lagging = fixture_json(ES, "ccr_stats.json")
    caught_up = copy.deepcopy(lagging)
    caught_up["follow_stats"]["indices"][0]["total_global_checkpoint_lag"] = 0
    caught_up["follow_stats"]["indices"][0]["shards"][0]["follower_global_checkpoint"] = 1024
    with FixtureServer() as srv, TrialStore() as store:
        srv.add_sequence("GET", "/_ccr/stats", [json.dumps(lagging)] * 3 + [json.dumps(caught_up)])

        async def run2() -> None:
            runner = TelemetryRunner([CcrStats({"ccr-stats-sample-interval": 0.1}, _ctx(srv))],
                                     lambda rows: store.add_telemetry("t1", rows))
            await runner.start()
            await asyncio.sleep(0.6)
            await runner.stop()

        asyncio.run(run2())
        summary = summarize_telemetry(store.telemetry("t1"))
    [f] = summary.followers
    assert f.index == "follower_index" and f.lag_ops_max == 256 and f.lag_ops_median in (0, 256, 128)
    assert f.lag_s_max is not None and f.lag_s_max >= 0
    [count] = summary.devices
    assert count.failed == 0 and count.samples >= 4


def _shard_stats(index: str, gcps: dict[int, int]) -> dict:
    return {"indices": {index: {"shards": {str(s): [{"routing": {"primary": True},
                                                     "seq_no": {"global_checkpoint": g, "max_seq_no": g}}]
                                           for s, g in gcps.items()}}}}


def test_es_device_measures_lag_against_the_leaders_own_checkpoint():
    # The follower's stats say the leader is at 1024 (its stale view); the leader itself is at 2000.
    with FixtureServer() as leader, FixtureServer() as follower:
        follower.add("GET", "/_ccr/stats", fixture(ES, "ccr_stats.json"))
        follower.add("GET", "/follower_index/_stats", _shard_stats("follower_index", {0: 768}))
        leader.add("GET", "/leader_index/_stats", _shard_stats("leader_index", {0: 2000}))
        ctx = TelemetryContext(
            targets={"remote_cluster": ClusterTarget(name="remote_cluster", hosts=[leader.host]),
                     "follower": ClusterTarget(name="follower", hosts=[follower.host])},
            clusters={"follower": {"engine": "elasticsearch", "version": "8.19.21"}})
        [s] = asyncio.run(_samples(CcrStats({"ccr-stats-clusters": ["follower"]}, ctx), [1.0]))
        assert leader.requests[0][2] == {"level": "shards"}
    assert _values(s, "follower_index", "lag_ops") == [2000.0 - 768.0]
    assert _values(s, "follower_index[0]", "lag_ops") == [2000.0 - 768.0]
    assert _values(s, "follower_index", "lag_ops_follower_view") == [256.0]
    assert _values(s, "follower_index", "leader_checkpoint") == [2000.0]
    assert _values(s, "follower_index", "follower_checkpoint") == [768.0]


def test_unreadable_leader_checkpoints_give_no_lag_and_an_error():
    with FixtureServer() as leader, FixtureServer() as follower:
        follower.add("GET", "/_ccr/stats", fixture(ES, "ccr_stats.json"))
        follower.add("GET", "/follower_index/_stats", _shard_stats("follower_index", {0: 768}))
        leader.add("GET", "/leader_index/_stats", {"error": "boom"}, status=503)
        ctx = TelemetryContext(
            targets={"remote_cluster": ClusterTarget(name="remote_cluster", hosts=[leader.host]),
                     "follower": ClusterTarget(name="follower", hosts=[follower.host])},
            clusters={"follower": {"engine": "elasticsearch", "version": "8.19.21"}})
        [s] = asyncio.run(_samples(CcrStats({"ccr-stats-clusters": ["follower"]}, ctx), [1.0]))
    # not the follower's stale view passed off as the lag, and not "missing" either
    assert _values(s, "follower_index", "lag_ops") == [] and _values(s, "follower_index", "missing") == []
    assert any("follower_index" in e and "HTTP 503" in e for e in s.errors)
    assert [r.value for r in s.rows if r.metric == "followers"] == [1.0]


# -- live -------------------------------------------------------------------------------------------------


def _target_from_url(name: str, url: str) -> ClusterTarget:
    u = urlsplit(url)
    opts = ClientOptions(use_ssl=u.scheme == "https", verify_certs=False,
                         basic_auth_user=u.username, basic_auth_password=u.password)
    return ClusterTarget(name=name, hosts=[f"{u.scheme}://{u.hostname}:{u.port}"], options=opts)


@pytest.mark.cluster  # real clusters, started elsewhere: never in the unit tier
@pytest.mark.skipif(not (os.environ.get("BENCH_CCR_LEADER") and os.environ.get("BENCH_CCR_FOLLOWER")),
                    reason="BENCH_CCR_LEADER and BENCH_CCR_FOLLOWER (URLs of CCR-capable clusters) are not set")
def test_live_ccr_stats_sample():
    follower = _target_from_url("follower", os.environ["BENCH_CCR_FOLLOWER"])

    async def run():
        info = await check_cluster(follower)
        ctx = TelemetryContext(targets={"follower": follower}, clusters={"follower": info})
        device = CcrStats({}, ctx)
        await device.open()
        try:
            return await device.sample("follower", 0.0)
        finally:
            await device.close()

    s = asyncio.run(run())
    [followers] = [r.value for r in s.rows if r.metric == "followers"]
    lags = [r for r in s.rows if r.metric == "lag_ops" and "[" not in r.node]
    assert len(lags) == followers and all(r.value >= 0 for r in lags)
