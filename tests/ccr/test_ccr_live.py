"""Live CCR on a real OpenSearch 2.19.1 leader/follower pair with the replication plugin (tests/support/ccr_pair.py, one
pair for the session; each test has its own indices): follow, index, lag over time against the clusters' own
checkpoints, wait for sync, final counts, a follower paused mid-indexing failing the sync, resume, unfollow,
auto-follow; and which engines refuse soft deletes off, checked against the real engines."""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from pathlib import Path

import pytest

from bench.ccr.engine import FollowerProgress, NoStats, OpenSearchReplication
from bench.ccr.section import SECTION, CcrSection
from bench.ccr.sync import leader_targets, wait_for_sync
from bench.cli import main
from bench.driver.runners.core import Context
from bench.driver.runners.registry import runner_for
from bench.http.client import ClusterTarget, RawHttp, check_cluster
from bench.provision.model import ClusterInfo
from bench.provision.soft_deletes import soft_deletes_off_supported
from bench.results.exit_status import EXIT_UNMEASURED
from bench.results.summary import status_label
from bench.telemetry.ccr_stats import CcrStats
from bench.telemetry.device import TelemetryContext
from bench.trials.sqlite import TrialStore
from bench.util.home import trials_dir
from tests.support.ccr_pair import (
    PLUGIN_ENV,
    CcrPairInfo,
    bulk,
    count,
    create_index,
    global_checkpoints,
    http,
    os_ccr_pair,  # noqa: F401 (the session fixture)
    write_ccr_track,
)
from tests.support.shared_tree import need_shared

pytestmark = pytest.mark.cluster
ROOT = Path(__file__).resolve().parents[2]


def _target(name: str, url: str) -> ClusterTarget:
    return ClusterTarget(name=name, hosts=[url.removeprefix("http://")])


def test_nox_session_provides_the_replication_plugin() -> None:
    # CI runs the live tests: its nox session points them at the plugin beside the project
    if os.environ.get("NOX_CURRENT_SESSION") != "tests":
        pytest.skip("only meaningful inside `nox -s tests`")
    shared = need_shared("opensearch-replication-plugin", "opensearch-cross-cluster-replication-2.19.1.0.zip")
    assert Path(os.environ[PLUGIN_ENV]).resolve() == shared.resolve()


@pytest.mark.timeout(600)
def test_lag_is_measured_against_the_leaders_own_checkpoints(os_ccr_pair: CcrPairInfo) -> None:  # noqa: F811
    pair, index = os_ccr_pair, "lag-truth"
    pair.fresh(index)
    leader_t, follower_t = _target("leader", pair.leader_url), _target("follower", pair.follower_url)
    create_index(pair.leader_url, index)
    bulks, per_bulk = 40, 500

    def index_docs() -> None:
        for i in range(bulks):
            bulk(pair.leader_url, index, i * per_bulk, per_bulk)

    async def run() -> tuple[list, object, float]:
        info = await check_cluster(follower_t)
        ctx = TelemetryContext(targets={"leader": leader_t, "follower": follower_t},
                               clusters={"follower": info, "leader": info})
        device = CcrStats({"ccr-stats-clusters": ["follower"]}, ctx)
        async with RawHttp(follower_t, connections=2) as fh, RawHttp(leader_t, connections=2) as lh:
            engine = OpenSearchReplication(fh, "follower")
            await engine.follow(index, remote="leader", leader_index=index, parameters={})
            await engine.wait_active(index, 120)
            await device.open()
            try:
                writer = threading.Thread(target=index_docs)
                writer.start()
                seen = []
                deadline = time.monotonic() + 240
                while writer.is_alive() and time.monotonic() < deadline:
                    before = await asyncio.to_thread(global_checkpoints, pair.leader_url, index)
                    fbefore = await asyncio.to_thread(global_checkpoints, pair.follower_url, index)
                    s = await device.sample("follower", time.monotonic())
                    after = await asyncio.to_thread(global_checkpoints, pair.leader_url, index)
                    fafter = await asyncio.to_thread(global_checkpoints, pair.follower_url, index)
                    seen.append((before, fbefore, s, after, fafter))
                    await asyncio.sleep(0.2)
                await asyncio.to_thread(writer.join, 60)
                t0 = time.monotonic()
                await wait_for_sync(engine, [index], leader=lambda p, i: leader_targets(lh, "leader", index),
                                    timeout=180)
                catch_up = time.monotonic() - t0
                final = await device.sample("follower", time.monotonic())
            finally:
                await device.close()
                await engine.unfollow(index)
        return seen, final, catch_up

    seen, final, catch_up = asyncio.run(run())

    def value(s, node: str, metric: str) -> float:
        [v] = [r.value for r in s.rows if r.node == node and r.metric == metric]
        return v

    assert len(seen) >= 3
    stale = []
    for before, fbefore, s, after, fafter in seen:
        assert s.errors == []
        leader, follower, lag = (value(s, index, m) for m in ("leader_checkpoint", "follower_checkpoint", "lag_ops"))
        # the leader's checkpoint as it was during the sample, not the follower's older view of it
        assert sum(before.values()) <= leader <= sum(after.values())
        assert sum(fbefore.values()) <= follower <= sum(fafter.values())
        per_shard = 0.0
        for shard in before:
            node = f"{index}[{shard}]"
            sl, sf = value(s, node, "leader_checkpoint"), value(s, node, "follower_checkpoint")
            assert before[shard] <= sl <= after[shard] and fbefore[shard] <= sf <= fafter[shard]
            assert value(s, node, "lag_ops") == max(0.0, sl - sf)
            per_shard += max(0.0, sl - sf)
        assert lag == per_shard
        # the time lag says the same as the operations lag: behind means seconds behind, caught up means 0
        secs = [r.value for r in s.rows if r.node == index and r.metric == "lag_seconds"]
        if secs:
            assert (secs[0] > 0) == (lag > 0), (lag, secs)
        stale.append(value(s, index, "lag_ops_follower_view") - lag)
    assert max(value(s, index, "lag_ops") for _, _, s, _, _ in seen) > 0  # it did lag while the leader indexed
    docs = count(pair.leader_url, index)
    assert docs == bulks * per_bulk == count(pair.follower_url, index)
    # caught up: no lag, and the checkpoints are the documents (append only: seq nos 0..n-1 per shard)
    assert value(final, index, "lag_ops") == 0 and value(final, index, "lag_seconds") == 0
    assert value(final, index, "leader_checkpoint") + 2 == docs == value(final, index, "follower_checkpoint") + 2
    lags = [value(s, index, "lag_ops") for _, _, s, _, _ in seen]
    secs = [r.value for _, _, s, _, _ in seen for r in s.rows if r.node == index and r.metric == "lag_seconds"]
    print(f"\nlive lag: {len(seen)} samples, lag ops max {max(lags):.0f} median {sorted(lags)[len(lags) // 2]:.0f}, "
          f"lag s max {max(secs, default=0):.2f}; follower view minus truth: min {min(stale):.0f} max {max(stale):.0f}; "
          f"catch-up after indexing {catch_up:.2f} s")


def _race(pair: CcrPairInfo, track: Path, params: str, capsys: pytest.CaptureFixture[str],
          *extra: str) -> tuple[int, str, dict]:
    rc = main(["--quiet", "race", f"--track-path={track}", f"--target-hosts={pair.target_hosts}",
               f"--track-params={params}", "--report-format=json", "--telemetry-params=ccr-stats-sample-interval:0.5",
               *extra])
    out = capsys.readouterr().out
    report = json.loads(out[out.index("{"):out.rindex("}") + 1])
    return rc, out, {(r["metric"], r["task"]): r["value"] for r in report["rows"]}


@pytest.mark.timeout(600)
def test_race_reports_the_catch_up_time_of_a_real_sync(os_ccr_pair: CcrPairInfo, tmp_path: Path,  # noqa: F811
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    track = write_ccr_track(tmp_path / "track")
    os_ccr_pair.fresh("race-synced")
    # Riding along on the same race: a lag threshold (judged on the CCR section's own value; none measured: exit 4),
    # the live page with the followers' lag, and the report's lag per interval.
    page = tmp_path / "live.html"
    rc, out, rows = _race(os_ccr_pair, track, "index:race-synced", capsys, "--threshold", "ccr:lag_max<600s",
                          f"--live-html={page}")
    try:
        assert rc == 0, out
        [lag] = json.loads(out[out.index("{"):out.rindex("}") + 1])["thresholds"]
        assert lag["result"] == "passed" and lag["value"] == rows[("Max CCR lag time", "follower/race-synced")]
        assert rows[("CCR doc counts match", "follower/race-synced")] == 1
        assert rows[("CCR follower docs", "follower/race-synced")] == 6000
        catch_up = rows[("100th percentile CCR catch-up time", "sync")]
        assert catch_up > 0 and rows[("error rate", "sync")] == 0
        assert ("Max CCR lag", "follower/race-synced") in rows
        with TrialStore() as store:
            [trial] = store.list_trials(1)
        assert trial.status == "complete"
        _live_page_shows_the_followers_lag(trial.id, "race-synced", page)
        _report_has_the_lag_per_interval(trial.id, "race-synced", capsys)
        print(f"\nrace catch-up time {catch_up:,.0f} ms, max lag {rows[('Max CCR lag', 'follower/race-synced')]:.0f} "
              f"ops")
    finally:
        os_ccr_pair.stop_replication("race-synced")


def _live_page_shows_the_followers_lag(trial_id: str, index: str, page: Path) -> None:
    """The ccr-stats device's samples reached the live page through the registered live-rows source, one line per
    follower, its lag over time, kept with the trial."""
    with TrialStore() as store:
        lag = store.telemetry(trial_id)
    record = json.loads((trials_dir() / trial_id / "live" / "live.json").read_text())
    points = record["extras"]["Follower lag"][f"follower/{index}"]
    measured = [p["values"]["lag ops"] for p in points if p["values"]["lag ops"] is not None]
    assert measured, points
    # every lag the page drew is one the device stored for that follower (never a made-up 0)
    stored = set(lag[(lag["device"] == "ccr-stats") & (lag["node"] == index) & (lag["metric"] == "lag_ops")]["value"])
    assert set(measured) <= stored, (measured, stored)
    html = page.read_text()
    assert "Follower lag: lag ops" in html and f'data-extra="follower/{index}"' in html


def _report_has_the_lag_per_interval(trial_id: str, index: str, capsys: pytest.CaptureFixture[str]) -> None:
    """The markdown report shows the follower's lag time per interval, and its windows add up to the run's lag rows."""
    capsys.readouterr()
    assert main(["report", trial_id]) == 0
    text = capsys.readouterr().out
    title = next(line for line in text.splitlines() if line.startswith("## CCR lag time per interval of "))
    assert title.endswith(f": follower/{index}")
    table = text[text.index(title):].split("\n\n")[1].splitlines()
    assert table[0].split("|")[1].strip() == "From" and len(table) == 2 + 10  # header, rule, ten intervals
    with TrialStore() as store:
        summary = store.summary(trial_id)
    assert summary is not None
    [f] = [f for f in CcrSection.model_validate(summary.sections[SECTION]).followers if f.index == index]
    ws = f.lag_over_time
    with TrialStore() as store:
        tel = store.telemetry(trial_id)
    mine = tel[(tel["device"] == "ccr-stats") & (tel["cluster"] == "follower") & (tel["node"] == index)]
    # The windows hold the lag-time readings; a reading with lag ops but only a lower bound for its lag time (the
    # first, typically) is in its window as unknown, and every reading of the follower is in one window or the other.
    times = mine[mine["metric"] == "lag_seconds"]
    assert sum(w.samples for w in ws) == len(times) > 3
    assert sum(w.samples + w.unknown for w in ws) == mine["timestamp"].nunique()
    assert f.lag_samples == len(mine[mine["metric"] == "lag_ops"]) >= len(times)
    assert max(w.max for w in ws if w.max is not None) == f.lag_s_max


@pytest.mark.timeout(600)
def test_paused_follower_fails_the_sync_then_resume_and_unfollow(os_ccr_pair: CcrPairInfo,  # noqa: F811
                                                                tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    pair, index = os_ccr_pair, "race-paused"
    track = write_ccr_track(tmp_path / "track")
    pair.fresh(index)
    rc, out, rows = _race(pair, track, f"index:{index},pause:true,sync_timeout:10", capsys, "--on-error=continue")
    try:
        assert rc == EXIT_UNMEASURED, out  # a follower that never synced is no measurement of replication
        # the failed sync is a failed request naming the follower and why, never a catch-up time
        assert not any(m.endswith("CCR catch-up time") for m, _ in rows), rows
        assert rows[("CCR catch-up failures", "sync")] == 1 and rows[("error rate", "sync")] == 100
        with TrialStore() as store:
            [trial] = store.list_trials(1)
            summary = store.summary(trial.id)
        assert status_label(trial.status, summary).startswith("complete, with errors")
        [sync] = [t for t in summary.tasks if t.task == "sync"]
        [message] = [e.message for e in sync.error_messages]
        # paused with the pause API: the wait ends at once instead of waiting out its timeout
        assert index in message and "was paused by a user" in message and "resume it" in message
        assert sync.service_time == {} and summary.ccr["catch_up"][0]["service_time_ms"] == {}
        assert rows[("CCR doc counts match", f"follower/{index}")] == 0

        async def resume_and_unfollow() -> tuple[float, object, object]:
            async with RawHttp(_target("follower", pair.follower_url), connections=2) as fh, \
                    RawHttp(_target("leader", pair.leader_url), connections=2) as lh:
                engine = OpenSearchReplication(fh, "follower")
                await engine.resume(index, {})
                outcome = await wait_for_sync(engine, [index], timeout=180,
                                              leader=lambda p, i: leader_targets(lh, "leader", index))
                synced = await engine.progress(index)
                await engine.unfollow(index)
                return outcome.seconds, synced, await engine.progress(index)

        seconds, synced, stopped = asyncio.run(resume_and_unfollow())
        assert isinstance(synced, FollowerProgress) and synced.status == "SYNCING"
        assert count(pair.leader_url, index) == count(pair.follower_url, index) == 6000
        assert isinstance(stopped, NoStats) and "not in progress" in stopped.reason
        # unfollowed: a plain index now, writable on the follower
        assert http("POST", f"{pair.follower_url}/{index}/_doc", {"n": -1})[0] == 201
        print(f"\ncatch-up after resume {seconds:.2f} s")
    finally:
        pair.stop_replication(index)


@pytest.mark.timeout(600)
def test_auto_follow_replicates_new_leader_indices(os_ccr_pair: CcrPairInfo) -> None:  # noqa: F811
    pair = os_ccr_pair
    pair.fresh("autof-1")

    async def run() -> tuple[float, FollowerProgress | NoStats]:
        async with RawHttp(_target("follower", pair.follower_url), connections=2) as fh:
            engine = OpenSearchReplication(fh, "follower")
            await engine.auto_follow("live-rule", remote="leader", patterns=["autof-*"],
                                     follow_pattern="{{leader_index}}", parameters={})
            try:
                create_index(pair.leader_url, "autof-1")
                bulk(pair.leader_url, "autof-1", 0, 300)
                t0 = time.monotonic()
                # the plugin looks for new leader indices every 30 s (its minimum poll interval)
                active = await engine.wait_active("autof-1", 120, poll=1.0)
                return time.monotonic() - t0, active
            finally:
                await engine.delete_auto_follow("live-rule", remote="leader")

    try:
        seconds, active = asyncio.run(run())
        assert isinstance(active, FollowerProgress) and active.leader_index == "autof-1"
        deadline = time.monotonic() + 120
        while count(pair.follower_url, "autof-1") < 300:
            assert time.monotonic() < deadline, "auto-followed index never got the leader's documents"
            time.sleep(1)
        print(f"\nauto-follow picked up autof-1 after {seconds:.1f} s")
    finally:
        pair.stop_replication("autof-1")


@pytest.mark.timeout(600)
def test_soft_deletes_off_refused_by_the_real_engines(os_ccr_pair: CcrPairInfo,  # noqa: F811
                                                      es_cluster: ClusterInfo) -> None:
    for url, engine in ((os_ccr_pair.leader_url, "opensearch"), (es_cluster.hosts[0], "elasticsearch")):
        _, nodes = http("GET", f"{url}/_nodes/_all/none?filter_path=nodes.*.version")
        [version] = {n["version"] for n in nodes["nodes"].values()}
        status, body = http("PUT", f"{url}/soft-deletes-off", {"settings": {"index.soft_deletes.enabled": False}})
        refused = status == 400 and "soft-deletes disabled is no longer supported" in json.dumps(body)
        if not refused:
            http("DELETE", f"{url}/soft-deletes-off")
        assert soft_deletes_off_supported(engine, version) is not refused, (engine, version, status, body)
        assert refused  # 2.19.1 and 8.19.21 both refuse


@pytest.mark.timeout(300)
def test_sync_of_every_follower_waits_for_a_paused_one(os_ccr_pair: CcrPairInfo) -> None:  # noqa: F811
    # follower_stats lists syncing followers only: "every follower" must still include the paused one
    pair = os_ccr_pair
    pair.fresh("every-a", "every-b")
    for index in ("every-a", "every-b"):
        create_index(pair.leader_url, index, shards=1)
        bulk(pair.leader_url, index, 0, 200)

    async def run() -> tuple[list[str], object]:
        async with RawHttp(_target("follower", pair.follower_url), connections=2) as fh, \
                RawHttp(_target("leader", pair.leader_url), connections=2) as lh:
            engine = OpenSearchReplication(fh, "follower")
            for index in ("every-a", "every-b"):
                await engine.follow(index, remote="leader", leader_index=index, parameters={})
            await engine.pause("every-b")
            bulk(pair.leader_url, "every-b", 200, 200)  # indexed while paused: it cannot catch up
            ctx = Context(http={"leader": lh, "follower": fh}, default_cluster="follower")
            res = await runner_for("wait-for-followers-to-sync")(ctx, {"timeout": 5, "_engine": "opensearch"})
            return await engine.follower_indices(), res

    try:
        names, res = asyncio.run(run())
        assert {"every-a", "every-b"} <= set(names)
        assert not res.success and "follower every-b on cluster follower was paused by a user" in res.detail
        assert "every-a" not in res.detail  # the synced one is not blamed
    finally:
        pair.fresh("every-a", "every-b")
