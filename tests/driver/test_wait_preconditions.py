"""A wait whose index was never created ends at once, as a failure naming the index, instead of holding the race.

Reproduces what hung six real tracks: the real nyc_taxis track (``../shared/tracks-real``), test mode, a tiny local
corpus, against the test cluster whose Maven build lacks ``mapper-extras``: its ``create-index`` fails
(``scaled_float``), and ``check-cluster-health`` (``retry-until-success``) used to retry its 30 s health wait for
minutes. Also: retrying an index-stats condition on a missing index stops at once, and test mode bounds waits.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from bench.track.loader import load_track
from bench.track.testmode import TEST_MODE_MAX_WAIT, apply_test_mode
from tests.support.track_repo import REAL_TREE as REAL
from tests.track.test_track_code import race, samples, write


def tiny_corpus(corpus_dir: Path, docs: int = 1000) -> Path:
    folder = corpus_dir / "nyc_taxis"
    folder.mkdir(parents=True)
    (folder / "documents.json").write_text("".join(
        json.dumps({"total_amount": i * 1.5, "vendor_id": str(i % 3), "pickup_datetime": "2015-01-01 00:00:00"})
        + "\n" for i in range(docs)))
    return corpus_dir


@pytest.mark.skipif(not (REAL / "nyc_taxis").is_dir(), reason=f"the real rally-tracks tree is not at {REAL}")
def test_nyc_taxis_health_wait_after_a_failed_create_index_ends_at_once(tmp_path: Path, es_target: str,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    corpus = tiny_corpus(tmp_path / "corpora")
    start = time.monotonic()
    rc, err = race(capsys, f"--track-path={REAL / 'nyc_taxis'}", f"--target-hosts={es_target}", "--test-mode",
                   f"--corpus-dir={corpus}", "--include-tasks=delete-index,create-index,check-cluster-health",
                   "--on-error=continue")
    took = time.monotonic() - start
    df = samples()
    create = df[df["task"] == "create-index"]
    health = df[df["task"] == "check-cluster-health"]
    # the cluster lacks mapper-extras: create-index fails (if it did not, this test would prove nothing)
    assert not create["success"].any(), err
    assert len(health) == 1 and not health["success"].iloc[0]
    assert health["error_type"].iloc[0] == "index-missing"
    # one health request (its own 30 s wait for green at most), never retried for minutes
    assert health["service_time"].iloc[0] < 40, health
    assert took < 120, f"the race took {took:.0f} s"


def test_a_retried_condition_on_a_missing_index_is_not_retried(tmp_path: Path, es_target: str,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    track = write(tmp_path / "t", {"track.json": {"indices": [{"name": "never-made"}], "schedule": [
        {"operation": {"operation-type": "delete-index"}},
        {"name": "wait-until-merges-finish", "operation": {
            "operation-type": "index-stats", "index": "never-made", "retry-until-success": True,
            "condition": {"path": "_all.total.merges.current", "expected-value": 0}}}]}})
    start = time.monotonic()
    rc, err = race(capsys, f"--track-path={track}", f"--target-hosts={es_target}", "--on-error=continue")
    assert time.monotonic() - start < 60, err
    df = samples()
    wait = df[df["task"] == "wait-until-merges-finish"]
    assert len(wait) == 1 and not wait["success"].iloc[0] and wait["status"].iloc[0] == 404, wait.T


def test_test_mode_bounds_the_waits_bench_runs(tmp_path: Path) -> None:
    track = write(tmp_path / "t", {"track.json": {"indices": [{"name": "i"}], "schedule": [
        {"operation": {"operation-type": "cluster-health", "retry-until-success": True}},
        {"operation": {"operation-type": "wait-for-recovery", "index": "i", "retry-max-duration": 5}}]}})
    tasks = apply_test_mode(load_track(track, {})).find_challenge(None).tasks()
    assert tasks[0].operation.params["retry-max-duration"] == TEST_MODE_MAX_WAIT
    assert tasks[1].operation.params["retry-max-duration"] == 5  # the track's own bound stays


def test_force_merge_polling_waits_for_its_task(tmp_path: Path, es_target: str,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    track = write(tmp_path / "t", {"track.json": {"indices": [{"name": "merged"}], "schedule": [
        {"operation": {"operation-type": "delete-index"}},
        {"operation": {"operation-type": "create-index"}},
        {"name": "merge", "operation": {"operation-type": "force-merge", "mode": "polling", "poll-period": 0.2,
                                        "max-num-segments": 1}}]}})
    rc, err = race(capsys, f"--track-path={track}", f"--target-hosts={es_target}")
    assert rc == 0, err
    merge = samples().query("task == 'merge'")
    assert len(merge) == 1 and merge["success"].all()
    assert merge["service_time"].iloc[0] >= 0.2  # it polled at least once


def test_an_unknown_force_merge_mode_is_one_line(tmp_path: Path, es_target: str,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    track = write(tmp_path / "t", {"track.json": {"indices": [{"name": "merged"}], "schedule": [
        {"operation": {"operation-type": "force-merge", "mode": "eventually"}}]}})
    rc, err = race(capsys, f"--track-path={track}", f"--target-hosts={es_target}")
    assert rc != 0 and "mode must be 'blocking' or 'polling', got 'eventually'" in err and "Traceback" not in err


def test_a_one_node_cluster_that_stays_yellow_names_the_missing_node(tmp_path: Path, es_target: str,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    # OSB's workloads default to one replica: on one node the health wait for green can never succeed
    track = write(tmp_path / "t", {"track.json": {
        "indices": [{"name": "replicated", "body": "index.json"}], "schedule": [
            {"operation": {"operation-type": "delete-index"}},
            {"operation": {"operation-type": "create-index"}},
            {"name": "health", "operation": {"operation-type": "cluster-health", "index": "replicated",
                                             "request-params": {"wait_for_status": "green", "timeout": "1s"}}}]},
        "index.json": {"settings": {"index.number_of_shards": 2, "index.number_of_replicas": 1}}})
    rc, err = race(capsys, f"--track-path={track}", f"--target-hosts={es_target}", "--on-error=continue")
    health = samples().query("task == 'health'")
    assert len(health) == 1 and not health["success"].iloc[0], err
    assert health["error"].iloc[0].startswith(
        "the cluster lacks a second node for the index's replicas"), health.T
    assert "yellow, expected green: 2 replica shards cannot be assigned on a one-node cluster" in \
        health["error"].iloc[0]
