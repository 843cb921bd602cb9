"""The RTT sweep (experiments/ccr-rtt-sweep-opensearch.yml) end to end on a real OpenSearch 2.19.1 pair (replication
plugin from BENCH_OPENSEARCH_REPLICATION_PLUGIN) in test mode, with one of its four round trips (50 ms) to keep CI
short (each variant starts a pair; several rows of the table and plot are tested on made-up trials in
tests/reporting/test_link_sweep_table.py): the pair replicates through bench's link proxy (remote cluster in proxy
mode), its trial stores the link with bench's measurement of it, the placement line and the sweep's table and plot
say it, and no proxy outlives its race."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import psutil
import pytest
import yaml

from bench.cli import main
from bench.cloud import local as cloud_local
from bench.compare.metrics import trial_values
from bench.race.experiment import load_experiment, runs_of
from bench.reporting.link_sweep import link_sweep_plot, row_values
from bench.reporting.link_sweep_load import load_link_sweep
from bench.reporting.study import load_study_table
from bench.trials.sqlite import TrialStore
from bench.trials.summary import stored_summary
from tests.support.checkout import ROOT

pytestmark = pytest.mark.usefixtures("local_engines")  # the experiment's races start the pairs

PLUGIN = os.environ.get("BENCH_OPENSEARCH_REPLICATION_PLUGIN")


def _one_rtt(folder: Path) -> Path:
    exp = yaml.safe_load((ROOT / "experiments" / "ccr-rtt-sweep-opensearch.yml").read_text())
    exp["variants"] = {"rtt-50": {"topology": str(ROOT / "topologies" / "ccr-local-opensearch-rtt50ms.yml")}}
    exp["baseline"] = "rtt-50"
    exp["study"]["indexing-task"] = {"rtt-50": "index-append"}
    path = folder / "rtt-sweep.yml"
    path.write_text(yaml.safe_dump(exp))
    return path


def _proxies() -> list[psutil.Process]:
    return [p for p in psutil.Process().children(recursive=True) if "bench.cloud.link_proxy" in " ".join(p.cmdline())]


@pytest.mark.timeout(1200)
@pytest.mark.skipif(not PLUGIN, reason="set BENCH_OPENSEARCH_REPLICATION_PLUGIN to the replication plugin zip")
def test_rtt_sweep_replicates_over_the_link_and_says_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    file = _one_rtt(tmp_path)
    remotes: list[dict[str, Any]] = []

    def hook(topology, cluster, info, started):  # type: ignore[no-untyped-def]
        if cluster.name == "follower":  # what the follower connects to, once bench has wired it
            remotes.append(cloud_local._request(info, "GET", "/_cluster/settings?flat_settings=true")["persistent"])

    cloud_local.register_after_start(hook)
    try:
        rc = main(["--quiet", "experiment", str(file), "--test-mode", f"--plugin={PLUGIN}"])
    finally:
        cloud_local._HOOKS.remove(hook)
    out = capsys.readouterr().out
    assert rc == 0, out
    assert _proxies() == []  # every proxy stopped with its race
    exp = load_experiment(file)
    with TrialStore() as store:
        [run_id] = runs_of(store, exp.name)
        sweep = load_link_sweep(store, exp, run_id)
        rows = {r.variant: r for r in sweep.rows}
        [linked] = rows["rtt-50"].trials
        info = store.get_trial(linked.trial_id)
        summary = stored_summary(store, linked.trial_id)
        placement = load_study_table(store, exp, run_id).lead[0]
    # the link as a fact of the trial: configured and measured through the proxy, in front of the leader
    follower = next(c for c in info.clusters if c["name"] == "follower")
    leader = next(c for c in info.clusters if c["name"] == "leader")
    [link] = follower["links"]
    assert (link["kind"], link["from"], link["to"], link["rtt_ms"]) == ("emulated", "follower", "leader", 50.0)
    # what the link adds to the leader's own answer time (which a busy 2-core machine makes milliseconds)
    # (within 10 % on the proxy alone, tests/cloud/test_link_proxy.py; here the proxy's own turn on a busy 2-core
    # machine can add a few ms more, never less than the configured round trip)
    assert 45 <= link["measured"]["added_rtt_ms"] <= 60 and link["measured"]["rtt_ms"] >= 45, link
    assert link["leader_transport"].startswith("127.0.0.1:") and "links" not in leader
    # the follower reached its leader through the proxy only (proxy mode: no seeds to sniff the leader's own ports)
    [linked_settings] = remotes
    assert linked_settings == {"cluster.remote.leader.mode": "proxy",
                               "cluster.remote.leader.proxy_address": link["proxy_address"]}, linked_settings
    # replicated through it: the follower has every document of the leader
    assert summary is not None
    assert trial_values(summary)[("CCR doc counts match", "follower/logs")][0] == 1
    # the sweep: the round trip measured, in its table
    v50 = row_values(rows["rtt-50"])
    assert v50["rtt_ms"] == 50.0 and v50["throughput"] is not None and v50["catch_up"] is not None, v50
    assert "| rtt-50 | follower->leader (emulated) | 50 ms | " in out
    assert "follower->leader over bench's emulated link (rtt 50 ms, rate unlimited)" in placement
    assert "Links as bench measured them before each race: rtt-50: follower->leader round trip " in placement
    # one variant writes no comparison report (nothing to compare): its plot is drawn from the stored trials
    plot = link_sweep_plot(sweep)
    assert plot is not None and plot.figure is not None
    assert [list(trace.x) for trace in plot.figure.data] == [[50.0]] * len(plot.figure.data)
