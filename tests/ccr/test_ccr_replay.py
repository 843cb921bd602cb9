"""CCR engine calls, the no-CCR detection and wait-for-followers-to-sync against the recorded answers in
../shared/fixtures (served by tests/support/fixture_server.py), plus the pure planning/report helpers."""

from __future__ import annotations

import asyncio
import copy
import json
from pathlib import Path

import pytest

from bench.ccr.engine import (
    NO_CCR,
    CcrError,
    ElasticsearchCcr,
    FollowerProgress,
    NoCcrSupport,
    NoStats,
    OpenSearchReplication,
    detect_engine,
    is_no_handler,
)
from bench.ccr.prepare import check_soft_deletes, plan_ccr, with_ccr_stats
from bench.ccr.runners import follow_parameters, wait_for_followers_to_sync
from bench.ccr.section import build_section, ccr_rows
from bench.ccr.sync import ShardTarget, shard_targets, wait_for_sync
from bench.driver.runners.core import Context
from bench.driver.runners.registry import runner_for
from bench.http.client import ClusterTarget, RawHttp
from bench.race.options import RaceOptions
from bench.results.summary import Summary, TaskSummary
from bench.track.loader import find_track, load_track
from bench.util.errors import ConfigError, TrackError
from tests.support.ccr_replay import CcrPair
from tests.support.fixture_server import FixtureServer, fixture, fixture_json

ES, OS = "elasticsearch-ccr", "opensearch-replication"


def run(coro):  # type: ignore[no-untyped-def]
    return asyncio.run(coro)


async def _with_http(srv: FixtureServer, fn):  # type: ignore[no-untyped-def]
    async with RawHttp(ClusterTarget(name="follower", hosts=[srv.host]), connections=2) as http:
        return await fn(http)


def _caught_up_es() -> dict:
    body = fixture_json(ES, "index_ccr_stats.json")
    for s in body["indices"][0]["shards"]:
        s["follower_global_checkpoint"] = s["follower_max_seq_no"] = s["leader_max_seq_no"]
    return body


# -- no CCR support ---------------------------------------------------------------------------------------------


def test_no_handler_answers_are_recognised() -> None:
    assert is_no_handler(400, fixture_json(ES, "no_ccr_module_put_follow_400.json"))
    assert is_no_handler(405, fixture_json(ES, "no_ccr_module_get_ccr_stats_405.json"))
    assert not is_no_handler(400, fixture_json(OS, "start_already_exists_error.json"))


def test_es_without_ccr_module_gives_the_clear_error() -> None:
    with FixtureServer() as srv:
        srv.add("PUT", "/nginx-follower/_ccr/follow", fixture(ES, "no_ccr_module_put_follow_400.json"),
                400)  # the recording was answered with HTTP 400 (index.json)
        srv.add("GET", "/_ccr/stats", fixture(ES, "no_ccr_module_get_ccr_stats_405.json"), 405)

        async def go(http: RawHttp) -> list[str]:
            engine = ElasticsearchCcr(http, "follower")
            errors = []
            for call in (engine.follow("nginx-follower", remote="leader", leader_index="nginx", parameters={}),
                         engine.probe()):
                with pytest.raises(NoCcrSupport) as e:
                    await call
                errors.append(str(e.value))
            return errors

        follow_error, probe_error = run(_with_http(srv, go))
    assert NO_CCR in follow_error and "PUT /nginx-follower/_ccr/follow" in follow_error and "HTTP 400" in follow_error
    assert "\n" not in follow_error
    assert NO_CCR in probe_error and "405" in probe_error


# -- engine calls -----------------------------------------------------------------------------------------------


def test_es_engine_calls() -> None:
    with FixtureServer() as srv:
        srv.add("PUT", "/f/_ccr/follow", fixture(ES, "put_follow.json"))
        srv.add("POST", "/f/_ccr/pause_follow", fixture(ES, "pause_follow.json"))
        srv.add("POST", "/f/_ccr/resume_follow", fixture(ES, "resume_follow.json"))
        srv.add("POST", "/f/_close", {"acknowledged": True})
        srv.add("POST", "/f/_ccr/unfollow", {"acknowledged": True})
        srv.add("PUT", "/_ccr/auto_follow/rule", fixture(ES, "put_auto_follow.json"))
        srv.add("DELETE", "/_ccr/auto_follow/rule", {"acknowledged": True})
        srv.add("GET", "/follower_index/_ccr/stats", fixture(ES, "index_ccr_stats.json"))

        async def go(http: RawHttp) -> FollowerProgress | NoStats:
            e = ElasticsearchCcr(http, "follower")
            await e.follow("f", remote="leader", leader_index="l", parameters={"max_read_request_size": "32mb"})
            await e.pause("f")
            await e.resume("f", {})
            await e.unfollow("f")
            await e.auto_follow("rule", remote="leader", patterns=["logs-*"], follow_pattern="{{leader_index}}-copy",
                                parameters={})
            await e.delete_auto_follow("rule", remote="leader")
            with pytest.raises(CcrError, match="unknown follow parameter"):
                await e.follow("f", remote="leader", leader_index="l", parameters={"max_reads": 1})
            return await e.progress("follower_index")

        progress = run(_with_http(srv, go))
        calls = [(m, p) for m, p, _ in srv.requests]
        follow_query = next(q for m, p, q in srv.requests if p == "/f/_ccr/follow")
    assert follow_query == {"wait_for_active_shards": "1"}
    # unfollow on Elasticsearch: pause, close, unfollow
    assert calls[3:6] == [("POST", "/f/_ccr/pause_follow"), ("POST", "/f/_close"), ("POST", "/f/_ccr/unfollow")]
    assert isinstance(progress, FollowerProgress) and progress.leader_index == "leader_index"
    assert progress.shards[0].follower_global_checkpoint == 768 and progress.shards[0].leader_max_seq_no == 1536


def test_opensearch_engine_calls() -> None:
    with FixtureServer() as srv:
        base = "/_plugins/_replication"
        srv.add("PUT", f"{base}/follower-01/_start", fixture(OS, "start.json"))
        srv.add("POST", f"{base}/follower-01/_pause", fixture(OS, "pause.json"))
        srv.add("POST", f"{base}/follower-01/_resume", fixture(OS, "resume.json"))
        srv.add("POST", f"{base}/follower-01/_stop", fixture(OS, "stop.json"))
        srv.add("POST", f"{base}/_autofollow", fixture(OS, "autofollow_create.json"))
        srv.add("DELETE", f"{base}/_autofollow", fixture(OS, "autofollow_delete.json"))
        srv.add("GET", f"{base}/follower_stats", fixture(OS, "follower_stats.json"))
        # a paused follower keeps the plugin's setting (absent from follower_stats); a stopped one has it null
        setting = "index.plugins.replication.follower.leader_index"
        srv.add("GET", f"/_all/_settings/{setting}", {"follower-02": {"settings": {setting: "leader:leader-02"}},
                                                      "stopped": {"settings": {setting: None}}})
        srv.add("PUT", f"{base}/follower-99/_start", fixture(OS, "start_missing_leader_index_error.json"), 404)
        srv.add("GET", "/_nodes/_all/none", {"nodes": {"n": {"version": "2.19.1"}}})

        async def go(http: RawHttp) -> tuple[list[str], str, str]:
            e = OpenSearchReplication(http, "follower")
            await e.follow("follower-01", remote="leader", leader_index="leader-01", parameters={})
            await e.pause("follower-01")
            await e.resume("follower-01", {})
            await e.unfollow("follower-01")
            await e.auto_follow("logs-rule", remote="leader", patterns=["logs-*"], follow_pattern="{{leader_index}}",
                                parameters={})
            await e.delete_auto_follow("logs-rule", remote="leader")
            with pytest.raises(CcrError, match="plugins.replication.follower"):
                await e.follow("x", remote="leader", leader_index="y", parameters={"max_read_request_size": "1mb"})
            with pytest.raises(CcrError, match="names followers like their leaders"):
                await e.auto_follow("r", remote="leader", patterns=["a*"], follow_pattern="{{leader_index}}-copy",
                                    parameters={})
            with pytest.raises(CcrError) as missing:
                await e.follow("follower-99", remote="leader", leader_index="missing-index", parameters={})
            return await e.follower_indices(), str(missing.value), await detect_engine(http)

        followers, missing, engine = run(_with_http(srv, go))
        start_query = next(q for m, p, q in srv.requests if p.endswith("follower-01/_start"))
    assert start_query == {"wait_for_restore": "true"}
    assert followers == ["follower-01", "follower-02"]
    assert "HTTP 404" in missing and "no such index [missing-index]" in missing and NO_CCR not in missing
    assert engine == "opensearch"


# -- wait-for-followers-to-sync ---------------------------------------------------------------------------------


def test_es_wait_lagging_then_caught_up() -> None:
    with FixtureServer() as srv:
        lagging = fixture(ES, "index_ccr_stats.json")
        srv.add_sequence("GET", "/follower_index/_ccr/stats", [lagging, lagging, lagging, _caught_up_es()])

        outcome = run(_with_http(srv, lambda http: wait_for_sync(ElasticsearchCcr(http, "follower"),
                                                                 ["follower_index"], timeout=30, poll_interval=0.05)))
    [f] = outcome.followers
    # no leader connection: the target is what the follower saw of the leader (max seq no 1536)
    assert f.source == "follower" and f.targets == {0: ShardTarget(0, 1024, 1536)}
    assert outcome.polls == 4 and outcome.seconds > 0 and f.synced_after is not None


def test_opensearch_wait_over_recorded_sequence() -> None:
    with FixtureServer() as srv:
        path = "/_plugins/_replication/follower-01/_status"
        srv.add_sequence("GET", path, [fixture(OS, "status_lagging.json"), fixture(OS, "status_lagging.json"),
                                       fixture(OS, "status_caught_up.json")])
        outcome = run(_with_http(srv, lambda http: wait_for_sync(OpenSearchReplication(http, "follower"),
                                                                 ["follower-01"], timeout=30, poll_interval=0.05)))
    [f] = outcome.followers
    assert f.total_target == 2004 and outcome.polls == 3
    assert isinstance(f.last, FollowerProgress) and f.last.follower_total == 2004


def test_es_timeout_names_index_shard_and_checkpoints() -> None:
    with FixtureServer() as srv:
        srv.add("GET", "/follower_index/_ccr/stats", fixture(ES, "index_ccr_stats.json"))
        with pytest.raises(CcrError) as e:
            run(_with_http(srv, lambda http: wait_for_sync(ElasticsearchCcr(http, "follower"), ["follower_index"],
                                                           timeout=0.4, poll_interval=0.05)))
    msg = str(e.value)
    assert "within 0.4 s" in msg and "follower_index shard 0" in msg
    assert "follower global checkpoint 768" in msg and "global checkpoint 1024 / max seq no 1536" in msg


@pytest.mark.parametrize("engine,path,answer", [
    ("es", "/follower_index/_ccr/stats", {"indices": []}),  # a paused follower vanishes from the stats
    ("os", "/_plugins/_replication/follower_index/_status", fixture_json(OS, "status_not_replicated.json")),
    ("os", "/_plugins/_replication/follower_index/_status",
     fixture_json(OS, "status_immediately_after_start_no_wait.json")),
])
def test_no_stats_never_counts_as_synced(engine: str, path: str, answer: dict) -> None:
    with FixtureServer() as srv:
        srv.add("GET", path, answer)
        cls = ElasticsearchCcr if engine == "es" else OpenSearchReplication
        with pytest.raises(CcrError) as e:
            run(_with_http(srv, lambda http: wait_for_sync(cls(http, "follower"), ["follower_index"], timeout=0.3,
                                                           poll_interval=0.05)))
    assert "no follower checkpoints" in str(e.value) and "follower_index" in str(e.value)


def test_paused_then_resumed_follower_syncs_only_after_resume() -> None:
    # A paused follower (no stats) does not end the wait; once it reports caught-up checkpoints it does.
    with FixtureServer() as srv:
        srv.add_sequence("GET", "/follower_index/_ccr/stats",
                         [{"indices": []}, {"indices": []}, fixture(ES, "index_ccr_stats.json"), _caught_up_es()])
        outcome = run(_with_http(srv, lambda http: wait_for_sync(ElasticsearchCcr(http, "follower"),
                                                                 ["follower_index"], timeout=30, poll_interval=0.05)))
    assert outcome.polls == 4


def test_runner_reports_the_sync_as_one_timed_request_and_fails_clearly() -> None:
    with FixtureServer() as leader, FixtureServer() as follower:
        shard = {"routing": {"primary": True}, "seq_no": {"max_seq_no": 2000, "global_checkpoint": 1999}}
        replica = {"routing": {"primary": False}, "seq_no": {"max_seq_no": 5, "global_checkpoint": 5}}
        leader.add("GET", "/leader_index/_stats", {"indices": {"leader_index": {"shards": {"0": [replica, shard]}}}})
        follower.add("GET", "/follower_index/_ccr/stats", fixture(ES, "index_ccr_stats.json"))

        async def go() -> object:
            https = {n: RawHttp(ClusterTarget(name=n, hosts=[s.host]), connections=2)
                     for n, s in (("leader", leader), ("follower", follower))}
            for h in https.values():
                await h.__aenter__()
            try:
                ctx = Context(http=https, default_cluster="leader")
                return await runner_for("wait-for-followers-to-sync")(
                    ctx, {"indices": ["follower_index"], "timeout": 0.3, "poll-interval": 0.05,
                          "_engine": "elasticsearch"})
            finally:
                for h in https.values():
                    await h.__aexit__(None, None, None)

        res = run(go())
    assert runner_for("wait-for-followers-to-sync") is wait_for_followers_to_sync
    assert not res.success and res.error_type == "ccr"
    # targets from the leader's primary (max seq no 2000), not the replica nor the follower's view (1536)
    assert "max seq no 2000" in res.detail and "follower global checkpoint 768" in res.detail


def test_shard_targets_use_primaries() -> None:
    stats = {"indices": {"l": {"shards": {"0": [{"routing": {"primary": True},
                                                   "seq_no": {"max_seq_no": 9, "global_checkpoint": 8}}],
                                          "1": [{"routing": {"primary": True},
                                                 "seq_no": {"max_seq_no": -1, "global_checkpoint": -1}}]}}}}
    t = shard_targets(stats, "l")
    assert t[0].value == 9 and t[1].value == -1
    with pytest.raises(CcrError, match="not in the leader's index stats"):
        shard_targets(stats, "other")


# -- planning, car variants, telemetry, report ---------------------------------------------------------------------


ROOT = Path(__file__).resolve().parents[2]


def test_ccr_challenges_load_and_keep_leader_index_placeholder() -> None:
    for name in ("http_logs", "nginx"):
        track = load_track(find_track(name, None), {})
        names = [c.name for c in track.challenges]
        assert {"ccr", "ccr-update-heavy", "baseline", "append-no-conflicts"} <= set(names)
        plan = plan_ccr(track, track.challenge("ccr"), ["leader", "follower"])
        assert plan is not None and plan.followers == ["follower"] and plan.leaders == ["leader"]
        [f] = plan.follows
        assert (f.follower_cluster, f.leader_cluster, f.leader_index) == ("follower", "leader", track.indices[0].name)
        update = [t for t in track.challenge("ccr-update-heavy").tasks() if t.operation.operation_type == "bulk"]
        assert update[0].operation.params["conflicts"] == "random"
        assert plan_ccr(track, track.challenge("baseline"), ["default"]) is None
    from bench.track import rally_helpers
    from bench.track.loader import _operations

    root = find_track("http_logs", None)
    env = rally_helpers.make_environment(root, {})
    text = rally_helpers.assemble(root, (root / "track.json").read_text())
    ops = _operations(json.loads(env.from_string(text).render()), root / "track.json")
    assert ops["auto-follow-logs"].params["follow-index-pattern"] == "{{leader_index}}"


def test_plan_names_missing_clusters() -> None:
    track = load_track(find_track("nginx", None), {})
    with pytest.raises(ConfigError, match=r"cluster 'follower'.*not part of this race.*ccr-local"):
        plan_ccr(track, track.challenge("ccr"), ["default"])


def test_bad_ccr_parameters_fail_at_load(tmp_path: Path) -> None:
    (tmp_path / "track.json").write_text(json.dumps({
        "indices": [{"name": "i"}], "operations": [],
        "schedule": [{"operation": {"operation-type": "wait-for-followers-to-sync", "timeout": -1}}]}))
    with pytest.raises(TrackError, match="timeout -1"):
        load_track(tmp_path, {}, check_challenge=True)


def test_soft_deletes_off_rejected_on_es8_os2_and_on_leaders() -> None:
    with pytest.raises(ConfigError, match="Elasticsearch 8.19.21 refuses to create indices with index.soft_deletes"):
        check_soft_deletes("default", "elasticsearch", "8.19.21", ["defaults", "soft-deletes-off"], None)
    with pytest.raises(ConfigError, match="OpenSearch 2.19.1 refuses to create indices with index.soft_deletes"):
        check_soft_deletes("default", "opensearch", "2.19.1", ["defaults", "soft-deletes-off"], None)
    check_soft_deletes("default", "opensearch", "1.3.20", ["defaults", "soft-deletes-off"], None)
    check_soft_deletes("default", "elasticsearch", "7.17.0", ["defaults", "soft-deletes-off"], None)
    track = load_track(find_track("nginx", None), {})
    plan = plan_ccr(track, track.challenge("ccr"), ["leader", "follower"])
    with pytest.raises(ConfigError, match="CCR leader needs soft deletes"):
        check_soft_deletes("leader", "elasticsearch", "7.17.0", ["defaults", "soft-deletes-off"], plan)


def test_follow_parameters_and_auto_telemetry() -> None:
    assert follow_parameters({"max-read-request-size": "1mb", "follow-parameters": {"max_retry_delay": "1s"},
                              "cluster": "follower"}) == {"max_read_request_size": "1mb", "max_retry_delay": "1s"}
    track = load_track(find_track("nginx", None), {})
    plan = plan_ccr(track, track.challenge("ccr"), ["leader", "follower"])
    opts = with_ccr_stats(RaceOptions(track="nginx"), plan)
    assert opts.telemetry == ["ccr-stats"] and opts.telemetry_params["ccr-stats-sample-interval"] == 5.0
    assert opts.telemetry_params["ccr-stats-clusters"] == ["follower"]
    chosen = RaceOptions(track="nginx", telemetry=["ccr-stats"])
    assert with_ccr_stats(chosen, plan) is chosen


def test_report_flags_doc_count_mismatch() -> None:
    track = load_track(find_track("nginx", None), {})
    plan = plan_ccr(track, track.challenge("ccr"), ["leader", "follower"])
    summary = Summary(tasks=[TaskSummary(task="wait-for-followers-to-sync", operation_type="wait-for-followers-to-sync",
                                         unit="ops", service_time={100.0: 640.0}, requests=1)],
                      telemetry={"followers": [{"cluster": "follower", "index": "nginx", "lag_ops_median": 10.0,
                                                "lag_ops_p99": 90.0, "lag_ops_max": 100.0, "lag_s_median": 0.5,
                                                "lag_s_p99": 1.5, "lag_s_max": 2.0, "read_exceptions": 0.0,
                                                "failed_read_requests": 0.0, "failed_write_requests": 0.0,
                                                "missing_samples": 0}]})
    section = build_section(plan, summary, {("leader", "nginx"): 1000, ("follower", "nginx"): 990})
    assert any("MISMATCH" in n and "990" in n for n in section.notes)
    rows = {(r.metric, r.task): r.value for r in ccr_rows(section.model_dump(mode="json"))}
    assert rows[("100th percentile CCR catch-up time", "wait-for-followers-to-sync")] == 640.0
    assert rows[("99th percentile CCR lag", "follower/nginx")] == 90.0
    assert rows[("CCR doc counts match", "follower/nginx")] == 0
    assert rows[("CCR leader docs", "leader/nginx")] == 1000
    ok = build_section(plan, summary, {("leader", "nginx"): 1000, ("follower", "nginx"): 1000})
    assert not any("MISMATCH" in n for n in ok.notes)
    full = Summary(**{**summary.model_dump(), "ccr": ok.model_dump(mode="json")})
    metrics = [r.metric for r in full.rows()]
    assert metrics.count("Median CCR lag") == 1  # shown once, in the CCR section
    assert copy.deepcopy(full).ccr == full.ccr


def test_a_sync_task_with_a_failed_wait_reports_no_catch_up_time() -> None:
    # Two waits synced in 600 ms, one timed out after 30 s: the task's p100 (30,006 ms) is the timeout, not a sync.
    track = load_track(find_track("nginx", None), {})
    plan = plan_ccr(track, track.challenge("ccr"), ["leader", "follower"])
    summary = Summary(tasks=[TaskSummary(task="wait-for-followers-to-sync", operation_type="wait-for-followers-to-sync",
                                         unit="ops", service_time={50.0: 600.0, 100.0: 30006.0}, requests=3,
                                         failed_requests=1)])
    section = build_section(plan, summary, {("leader", "nginx"): 1000, ("follower", "nginx"): 1000})
    rows = {(r.metric, r.task): r.value for r in ccr_rows(section.model_dump(mode="json"))}
    assert not any(m.endswith("CCR catch-up time") for m, _ in rows), rows
    assert rows[("CCR catch-up failures", "wait-for-followers-to-sync")] == 1
    assert any("no catch-up time is reported" in n for n in section.notes)


async def _run_sync_runner(srv: FixtureServer, params: dict) -> object:
    async with RawHttp(ClusterTarget(name="follower", hosts=[srv.host]), connections=2) as http:
        return await runner_for("wait-for-followers-to-sync")(Context(http={"follower": http}, default_cluster="follower"),
                                                           params)


def test_sync_runner_names_the_followers_when_a_poll_is_unreadable() -> None:
    # an answer that is not the plugin's (a proxy's HTML page) is a failed sync of that follower, not a crash
    with FixtureServer() as srv:
        srv.add("GET", "/_plugins/_replication/follower-07/_status", "<html>bad gateway</html>")
        res = run(_run_sync_runner(srv, {"indices": ["follower-07"], "timeout": 1, "_engine": "opensearch"}))
    assert not res.success and res.error_type == "ccr"
    assert "follower-07" in res.detail and "did not sync" in res.detail and "expected a JSON object" in res.detail


def test_sync_timeout_is_the_followers_answer_not_a_missing_one() -> None:
    with FixtureServer() as srv:
        srv.add("GET", "/_plugins/_replication/follower_index/_status", fixture_json(OS, "status_paused.json"))
        res = run(_run_sync_runner(srv, {"indices": ["follower_index"], "timeout": 0.3, "poll-interval": 0.05,
                                         "_engine": "opensearch"}))
    # the follower answered every poll (paused): an HTTP-answered failure, so the summary does not blame bench
    assert not res.success and res.status == 200 and "follower_index" in res.detail and "paused" in res.detail


def test_default_followers_include_a_paused_one() -> None:
    # Elasticsearch drops a paused follower from _ccr/stats; waiting for "every follower" must still wait for it
    with CcrPair("elasticsearch") as pair:
        async def go() -> tuple[list[str], object]:
            async with RawHttp(ClusterTarget(name="follower", hosts=[f"127.0.0.1:{pair.ports['follower']}"]),
                               connections=2) as http:
                engine = ElasticsearchCcr(http, "follower")
                for index in ("a", "b"):
                    await engine.follow(index, remote="leader", leader_index=index, parameters={})
                await engine.pause("b")
                names = await engine.follower_indices()
                res = await runner_for("wait-for-followers-to-sync")(
                    Context(http={"follower": http}, default_cluster="follower"),
                    {"timeout": 0.5, "poll-interval": 0.05, "_engine": "elasticsearch"})
                return names, res

        names, res = run(go())
    assert names == ["a", "b"]
    # paused by a user (_ccr/info says paused): the wait ends at once, naming it
    assert not res.success and "follower b on cluster follower was paused by a user" in res.detail
