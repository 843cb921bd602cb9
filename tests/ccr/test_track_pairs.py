"""The built-in tracks' CCR challenges and their baselines name the same load alike, so ``bench compare`` lines
up their task rows (throughput, latency, errors) instead of listing them as "only in" one side."""

from __future__ import annotations

import pytest

from bench.track.loader import find_track, load_track

PAIRS = [("ccr", "baseline"), ("ccr-update-heavy", "baseline-update-heavy")]


def _bulk_tasks(track, challenge: str) -> list[tuple[str, str | None]]:
    return [(t.name, t.operation.params.get("cluster")) for t in track.challenge(challenge).tasks()
            if t.operation.operation_type == "bulk"]


@pytest.mark.parametrize("name", ["http_logs", "nginx"])
def test_ccr_challenge_and_baseline_name_the_bulk_task_alike(name: str) -> None:
    track = load_track(find_track(name, None), {})
    for ccr, baseline in PAIRS:
        ccr_tasks, base_tasks = _bulk_tasks(track, ccr), _bulk_tasks(track, baseline)
        assert [n for n, _ in ccr_tasks] == [n for n, _ in base_tasks], (name, ccr, baseline)
        # Same name, different target: the CCR load still goes to the leader, the baseline's to its one cluster.
        assert [c for _, c in ccr_tasks] == ["leader"] and [c for _, c in base_tasks] == [None]
