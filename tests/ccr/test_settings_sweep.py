"""The follower settings sweep on the real OpenSearch pair (tests/support/ccr_pair.py): two variants of the nginx
track's ``ccr`` challenge, the plugin's default follower settings and a follower starved of them (16 operations
per batch, one reader and one writer per shard), judged against the same N and the same sync timeout. The default
catches up within N; the starved one is still behind when its wait times out, which the table says in words and
with the wait's own duration, never as a catch-up time."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from bench.race.experiment import ExperimentFile, load_experiment, run_experiment
from bench.race.options import RaceOptions
from bench.reporting.study import markdown_table
from bench.reporting.sweep import sweep_view
from bench.reporting.sweep_load import load_sweep_table
from bench.trials.sqlite import TrialStore
from tests.support.ccr_pair import CcrPairInfo, http, os_ccr_pair  # noqa: F401 (the session fixture)

pytestmark = pytest.mark.cluster
INDEX = "nginx"
SETTINGS = ("plugins.replication.follower.index.ops_batch_size",
            "plugins.replication.follower.concurrent_readers_per_shard",
            "plugins.replication.follower.concurrent_writers_per_shard")
WITHIN, TIMEOUT = 20, 25


def _experiment(pair: CcrPairInfo, path: Path) -> ExperimentFile:
    path.write_text(f"""
name: sweep-live
baseline: defaults
race:
  track: nginx
  challenge: ccr
  target-hosts: "{pair.target_hosts}"
  track-params: {{doc_count: 30000, bulk_size: 500, bulk_indexing_clients: 2, warmup_time_period: 0,
                  sync_timeout: {TIMEOUT}}}
variants:
  defaults:
    track-params:
      follower_settings: {{{', '.join(f'{s}: null' for s in SETTINGS)}}}
  starved:
    track-params:
      follower_settings: {{{SETTINGS[0]}: 16, {SETTINGS[1]}: 1, {SETTINGS[2]}: 1}}
study:
  catch-up-within: {WITHIN}
""")
    return load_experiment(path)


@pytest.mark.timeout(600)
def test_sweep_judges_a_default_follower_caught_up_and_a_starved_one_behind(os_ccr_pair: CcrPairInfo,  # noqa: F811
                                                                           tmp_path: Path) -> None:
    from bench.race.race import run_race

    pair = os_ccr_pair
    exp = _experiment(pair, tmp_path / "sweep.yml")

    def race(opts: RaceOptions) -> Any:
        pair.fresh(INDEX)  # an existing pair: the previous variant's follower index still replicates
        return run_race(opts)

    started = time.monotonic()
    try:
        with TrialStore() as store:
            result = run_experiment(exp, store=store, run_race=race, say=print)
            table = load_sweep_table(store, exp, result.run_id)
    finally:
        pair.fresh(INDEX)
        http("PUT", f"{pair.follower_url}/_cluster/settings", {"persistent": {s: None for s in SETTINGS}})
    text = markdown_table(sweep_view(table))
    print(f"\nsweep of 2 variants took {time.monotonic() - started:.0f} s\n{text}")
    assert not result.failed, result.failed  # the starved race ran to its end: its failed wait is its verdict
    defaults, starved = table.rows
    [d] = defaults.trials
    assert d.kind == "caught up" and d.seconds is not None and 0 < d.seconds <= WITHIN, d
    assert defaults.verdict(WITHIN) == f"caught up within {WITHIN} s"
    [s] = starved.trials
    # its wait ran to its timeout: the failed request's own duration, at least N
    assert s.kind == "fell behind" and s.seconds is not None and TIMEOUT <= s.seconds < TIMEOUT + 5, s
    assert s.text == f"fell behind (not caught up after {s.seconds:.1f} s)"
    assert set(starved.settings.split(", ")) == {"index.ops_batch_size=16", "concurrent_readers_per_shard=1",
                                                 "concurrent_writers_per_shard=1"}
    assert "index.ops_batch_size=default" in defaults.settings
    assert text.count("\n| ") == 3 and "| starved |" in text and "| fell behind |" in text  # one table
