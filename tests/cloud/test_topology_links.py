"""A topology's ``links``: read into bench's units; a bad value is one line naming the file, the field and the value;
loss refused on provider local (a TCP proxy cannot drop packets) rather than ignored."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from bench.cli import main
from bench.cloud.topology import load_topology, parse_topology
from bench.util.errors import ConfigError


def _topo(links: list[dict[str, Any]], provider: str = "local") -> dict[str, Any]:
    extra = {"region": "us-east-1"} if provider == "aws" else {}
    clusters: list[dict[str, Any]] = [{"name": "leader"}, {"name": "follower", "remote_clusters": ["leader"]}]
    if provider != "local":
        for c in clusters:
            c["instance_type"] = "c5d.large"
    return {"name": "t", "provider": provider, **extra, "clusters": clusters, "links": links}


def test_links_are_read_in_bench_units() -> None:
    topo = parse_topology(_topo([{"from": "follower", "to": "leader", "rtt": "100ms", "rate": "200mbit"}]))
    link = topo.link("follower", "leader")
    assert link is not None and (link.rtt_ms, link.rate_bps) == (100.0, 200_000_000)
    assert link.text() == "follower->leader rtt 100 ms, rate 200mbit"
    assert topo.link("leader", "follower") is None
    assert parse_topology(_topo([{"from": "follower", "to": "leader", "rtt": "0.2s"}])).links[0].rtt_ms == 200.0


@pytest.mark.parametrize(("link", "expected"), [
    ({"from": "follower", "to": "leader", "rtt": "fast"},
     "topology <topology>: links[0].rtt: 'fast' is not a round trip time: write it like 100ms or 0.1s"),
    ({"from": "follower", "to": "leader", "rate": "fast"},
     "topology <topology>: links[0].rate: 'fast' is not a rate: write it like 200mbit (units bit, kbit, mbit, gbit)"),
    ({"from": "follwer", "to": "leader"},
     "topology <topology>: links[0].from: 'follwer' is not a cluster of this topology (clusters: leader, follower)"),
    ({"from": "leader", "to": "follower"},
     "topology <topology>: links[0]: cluster leader does not connect to follower (add follower to "
     "clusters[leader].remote_clusters)"),
    ({"from": "follower", "to": "leader", "rtt": "100ms", "loss": "0.1%"},
     "topology <topology>: links[0].loss: provider local emulates a link with a TCP proxy, which cannot drop packets "
     "(this kernel has no netem); remove loss"),
])
def test_bad_links_are_one_line_naming_the_field(link: dict[str, Any], expected: str) -> None:
    with pytest.raises(ConfigError) as e:
        parse_topology(_topo([link]))
    assert str(e.value) == expected


def test_a_shaped_cloud_link_is_refused_not_ignored() -> None:
    with pytest.raises(ConfigError) as e:
        parse_topology(_topo([{"from": "follower", "to": "leader", "rtt": "100ms", "rate": "1gbit"}], "aws"))
    assert str(e.value) == ("topology <topology>: links[0].rtt: on aws the link is the real network between the "
                            "hosts, which bench measures before the race, not emulates: remove rtt, rate")
    # naming the connection without shaping it is accepted: bench measures it either way
    assert parse_topology(_topo([{"from": "follower", "to": "leader"}], "aws")).links[0].label == "follower->leader"


def test_bundled_rtt_topologies_load() -> None:
    for rtt in (50, 100, 200):
        link = load_topology(f"topologies/ccr-local-opensearch-rtt{rtt}ms.yml").link("follower", "leader")
        assert link is not None and link.rtt_ms == rtt


def test_race_with_a_bad_link_exits_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "wan.yml"
    path.write_text(yaml.safe_dump(_topo([{"from": "follower", "to": "leader", "rtt": "fast"}])))
    rc = main(["race", f"--topology={path}", "--track=http_logs", "--challenge=ccr", "--test-mode"])
    err = capsys.readouterr().err
    assert rc != 0 and "Traceback" not in err
    assert f"topology {path}: links[0].rtt: 'fast' is not a round trip time" in err
