"""provider: local — ``bench race --topology=FILE`` starts every cluster of the topology with the
LocalProvisioner (real Elasticsearch on 127.0.0.1), wires remote clusters, runs the race against the
first cluster and stops them all."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import pytest

from bench.cli import main
from bench.cloud import local as cloud_local
from bench.cloud.topology import parse_topology
from bench.trials.sqlite import TrialStore
from bench.util.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]


def test_start_order_follows_remote_clusters() -> None:
    topo = parse_topology({"name": "t", "clusters": [{"name": "follower", "remote_clusters": ["leader"]},
                                                     {"name": "leader"}]})
    assert [c.name for c in cloud_local.start_order(topo)] == ["leader", "follower"]
    cyclic = parse_topology({"name": "t", "clusters": [{"name": "a", "remote_clusters": ["b"]},
                                                       {"name": "b", "remote_clusters": ["a"]}]})
    with pytest.raises(ConfigError, match="cycle"):
        cloud_local.start_order(cyclic)


@pytest.mark.timeout(600)
@pytest.mark.usefixtures("local_engines")  # the topology's clusters, on 127.0.0.1
def test_race_on_local_ccr_topology(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    seen: dict[str, list[str]] = {}

    def hook(topo, cluster, info, started):  # type: ignore[no-untyped-def]
        # After-start hooks see each cluster once it is up, after the clusters it depends on.
        seen[cluster.name] = sorted(started)
        if cluster.name == "follower":
            with urllib.request.urlopen(f"{info.hosts[0]}/_remote/info", timeout=30) as r:
                seen["remote"] = json.loads(r.read())["leader"]["seeds"]
            seen["leader_transport"] = started["leader"].transport_addresses

    cloud_local.register_after_start(hook)
    try:
        rc = main(["--quiet", "race", "--topology", str(ROOT / "topologies" / "ccr-local.yml"), "--track", "nginx",
                   "--test-mode", "--user-tag", "topo:ccr-local"])
    finally:
        cloud_local._HOOKS.remove(hook)
    out = capsys.readouterr().out
    assert rc == 0, out
    assert seen["leader"] == ["leader"] and seen["follower"] == ["follower", "leader"]
    assert seen["remote"] == seen["leader_transport"]
    trial_id = out.split("Trial ")[-1].split()[0]
    with TrialStore() as store:
        trial = store.get_trial(trial_id)
    assert trial.status == "complete"
    assert [c["name"] for c in trial.clusters] == ["leader", "follower"]
    assert trial.options["topology"].endswith("ccr-local.yml")


def test_topology_and_target_hosts_exclude_each_other(capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["race", "--topology", str(ROOT / "topologies" / "single-local.yml"), "--track", "nginx",
               "--target-hosts", "127.0.0.1:9200"])
    assert rc == 2 and "exclude each other" in capsys.readouterr().err


def test_cloud_topology_race_needs_a_driver(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "t.yml"
    path.write_text("name: nodriver\nprovider: aws\nregion: us-east-1\nclusters:\n  - name: a\n    instance_type: t3.small\n")
    rc = main(["race", "--topology", str(path), "--track", "nginx", "--yes"])
    assert rc == 2 and "needs a load-driver host" in capsys.readouterr().err
