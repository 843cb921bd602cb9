"""The driver's CPU per Ray node in, the summary's notes out (``bench.ray.busy_nodes``; needs no Ray)."""

from __future__ import annotations

from bench.ray.busy_nodes import BUSY_SHARE, busy_node_notes


def test_only_nodes_over_the_share_are_flagged_with_their_figure() -> None:
    notes = busy_node_notes({"Ray node 10.0.0.5 (aaaaaaaa)": 0.42, "Ray node 10.0.0.6 (3f2a9c1b)": 0.93,
                             "Ray node 10.0.0.7 (bbbbbbbb)": BUSY_SHARE})
    assert notes == ["Load driver: Ray node 10.0.0.6 (3f2a9c1b) drove with 93 % of a core per worker (over 80 %): "
                     "the load driver there may have limited the load; add Ray nodes or workers"]


def test_a_figure_just_over_the_share_does_not_read_as_equal() -> None:
    (note,) = busy_node_notes({"Ray node 10.0.0.6 (3f2a9c1b)": 0.804})
    assert "80.4 % of a core per worker (over 80 %)" in note


def test_no_busy_node_no_note() -> None:
    assert busy_node_notes({}) == []
    assert busy_node_notes({"Ray node 10.0.0.5 (aaaaaaaa)": 0.79}) == []
    assert len(busy_node_notes({"a": 1.2, "b": 0.9}, busy_share=1.0)) == 1
