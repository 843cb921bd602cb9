"""The placement line says the link a trial's clusters raced over, and bench's measurement of it per variant."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from bench.reporting.placement import PlacedTrial, placement_line, where_text
from bench.trials.model import TrialInfo

HOST = {"machine_id": "m1", "hostname": "vm", "cpu_count": 2}


def _info(tid: str, links: list[dict[str, Any]]) -> TrialInfo:
    return TrialInfo(id=tid, track="t", challenge="ccr", start_time=datetime.now(timezone.utc), machine=HOST,
                     clusters=[{"name": "leader", "host": HOST}, {"name": "follower", "host": HOST, "links": links}])


def _link(added: float) -> dict[str, Any]:
    return {"from": "follower", "to": "leader", "kind": "emulated", "rtt_ms": 50.0, "rate": "unlimited",
            "measured": {"rtt_ms": added + 2, "added_rtt_ms": added}}


def test_placement_says_the_link_and_its_measurement() -> None:
    assert where_text(_info("a", [_link(51)])).endswith(
        "; follower->leader over bench's emulated link (rtt 50 ms, rate unlimited), not pinned")
    line = placement_line([PlacedTrial(variant="rtt-0", info=_info("z", [])),
                           PlacedTrial(variant="rtt-50", info=_info("a", [_link(51)])),
                           PlacedTrial(variant="rtt-50", info=_info("b", [_link(53)]))])
    assert "rtt-50: leader, follower and the load driver shared one host" in line
    assert ("Links as bench measured them before each race: rtt-50: follower->leader round trip 54.0 ms "
            "(52.0 ms more than without the link).") in line
