"""The followers' lag in the live page of a real CCR race (the session's OpenSearch 2.19.1 leader/follower pair with
the replication plugin, tests/support/ccr_pair.py): the ccr-stats device's samples reach the page through the
registered live-rows source, one line per follower, its lag over time, kept with the trial."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.cli import main
from bench.trials.sqlite import TrialStore
from bench.util.home import trials_dir
from tests.support.ccr_pair import CcrPairInfo, os_ccr_pair, write_ccr_track  # noqa: F401 (the session fixture)

pytestmark = pytest.mark.cluster


@pytest.mark.timeout(600)
def test_the_live_page_of_a_ccr_race_shows_each_followers_lag(os_ccr_pair: CcrPairInfo,  # noqa: F811
                                                               tmp_path: Path) -> None:
    index = "live-lag"
    track = write_ccr_track(tmp_path / "track", docs=2000)
    os_ccr_pair.fresh(index)
    page = tmp_path / "live.html"
    rc = main(["--quiet", "race", f"--track-path={track}", f"--target-hosts={os_ccr_pair.target_hosts}",
               f"--track-params=index:{index}", "--telemetry-params=ccr-stats-sample-interval:0.5",
               f"--live-html={page}"])
    assert rc == 0
    with TrialStore() as store:
        [trial] = store.list_trials(1)
        lag = store.telemetry(trial.id)
    record = json.loads((trials_dir() / trial.id / "live" / "live.json").read_text())
    points = record["extras"]["Follower lag"][f"follower/{index}"]
    measured = [p["values"]["lag ops"] for p in points if p["values"]["lag ops"] is not None]
    assert measured, points
    # every lag the page drew is one the device stored for that follower (never a made-up 0)
    stored = set(lag[(lag["device"] == "ccr-stats") & (lag["node"] == index) & (lag["metric"] == "lag_ops")]["value"])
    assert set(measured) <= stored, (measured, stored)
    html = page.read_text()
    assert "Follower lag: lag ops" in html and f'data-extra="follower/{index}"' in html
