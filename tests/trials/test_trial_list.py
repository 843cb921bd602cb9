"""``bench list trials``: test mode, car, track params and tags of every trial; fits the terminal, cuts nothing."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from bench.cli import main
from bench.trials.listing import render_trial_list
from bench.trials.sqlite import TrialInfo, TrialStore

LONG = TrialInfo(id="3f2a9c1b2d4e" + "a" * 20, track="http_logs", challenge="append-no-conflicts",
                 car=["defaults", "4gheap", "tcp-compression"], test_mode=True, status="complete",
                 track_params={"doc_count": 2000000, "bulk_indexing_clients": 4,
                               "follow_parameters": {"max_read_request_size": "32mb"}},
                 user_tags={"experiment": "ccr-overhead-opensearch", "experiment-run": "20261123T175649",
                            "variant": "ccr-tcp-compression", "repetition": "3"},
                 start_time=datetime(2026, 11, 23, 17, 56, tzinfo=UTC))
SHORT = TrialInfo(id="77b01e" + "b" * 26, track="nginx", challenge="index-only", status="complete",
                  start_time=datetime(2026, 11, 23, 18, 1, tzinfo=UTC))
STATUS = {LONG.id: "complete, with errors (12 failed requests)"}


@pytest.mark.parametrize("width", [80, 120])
def test_every_line_fits_and_nothing_is_cut(width):
    text = render_trial_list([LONG, SHORT], STATUS, width)
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= width
    assert "…" not in text
    # Wrapping only moves words: every word of the unwrapped listing is there, in the same order.
    words = [w for w in text.split() if set(w) != {"-"}]  # the header's rule is cut to the width
    assert words == [w for w in render_trial_list([LONG, SHORT], STATUS, None).split() if set(w) != {"-"}]
    first = next(line for line in lines if line.startswith("3f2a9c1b2d4e"))
    assert "test" in first.split() and "complete," in first  # id, mode and the status start on one line
    assert 'follow_parameters={"max_read_request_size":' in text and "variant=ccr-tcp-compression" in text


def test_piped_output_keeps_a_trial_on_two_lines():
    lines = render_trial_list([LONG, SHORT], STATUS, None).splitlines()
    assert len(lines) == 3 + 2 * 2
    row = next(line for line in lines if line.startswith("3f2a9c1b2d4e"))
    assert "complete, with errors (12 failed requests)" in row and "http_logs/append-no-conflicts" in row
    details = lines[lines.index(row) + 1]
    assert details.split()[:2] == ["car", "defaults+4gheap+tcp-compression"] and "doc_count=2000000" in details


def test_bench_list_trials_shows_mode_params_and_tags(capsys):
    with TrialStore() as store:
        store.create_trial(LONG)
        store.create_trial(SHORT)
    assert main(["list", "trials"]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith(SHORT.id[:12]))
    assert row.split()[-2:] == ["full", "complete"]
    assert "test" in next(line for line in out.splitlines() if line.startswith(LONG.id[:12])).split()
    assert "bulk_indexing_clients=4" in out and "experiment=ccr-overhead-opensearch" in out
