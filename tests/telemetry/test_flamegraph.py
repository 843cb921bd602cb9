"""Flame graph building blocks (pure): folded stacks, the frame tree, the differential and the frames that grew."""

from __future__ import annotations

import json
import re

import pytest

from bench.telemetry.flamegraph import (
    frame_shares,
    parse_collapsed,
    pool_shares,
    render_page,
    to_collapsed,
    top_changes,
    tree,
)

BASE = {"[write];a.Bulk.run;a.Index.add": 60, "[write];a.Bulk.run;a.Translog.add": 20, "[search];b.Query.run": 20}
CCR = {"[write];a.Bulk.run;a.Index.add": 60, "[write];a.Bulk.run;a.Translog.add": 20, "[search];b.Query.run": 20,
       "[ccr];c.ShardChanges.read;a.Translog.read": 80, "[ccr];c.ShardChanges.read;c.Lucene.read": 20}


def test_folded_text_round_trips_and_a_bad_line_is_named() -> None:
    assert parse_collapsed(to_collapsed(BASE)) == BASE
    assert parse_collapsed("a;b 2\na;b 3\n\n") == {"a;b": 5}
    with pytest.raises(ValueError, match="line 2 is not"):
        parse_collapsed("a;b 2\na;b three\n")


def test_the_tree_counts_each_frame_with_what_it_calls() -> None:
    t = tree(BASE)
    assert t["n"] == "all" and t["v"] == 100
    write = t["c"][0]
    assert (write["n"], write["v"]) == ("[write]", 80)
    assert [(k["n"], k["v"]) for k in write["c"][0]["c"]] == [("a.Index.add", 60), ("a.Translog.add", 20)]


def test_the_differential_colours_share_changes_and_ranks_the_frames_that_grew() -> None:
    t = tree(CCR, BASE)
    by_name = {k["n"]: k for k in t["c"]}
    assert by_name["[ccr]"]["d"] == pytest.approx(0.5)  # 100 of 200 samples, none before
    assert by_name["[write]"]["d"] == pytest.approx(80 / 200 - 80 / 100)  # same samples, half the share
    top = top_changes(BASE, CCR, n=3)
    assert [c.frame for c in top] == ["c.ShardChanges.read", "a.Translog.read", "c.Lucene.read"]
    assert top[0].base_share == 0 and top[0].share == pytest.approx(0.5)
    assert frame_shares(CCR, inclusive=False)["a.Translog.read"] == pytest.approx(0.4)
    assert pool_shares(CCR) == pytest.approx({"[write]": 0.4, "[search]": 0.1, "[ccr]": 0.5})


def test_the_page_is_self_contained_and_carries_its_data() -> None:
    page = render_page(tree({"[x];</script><b>.m": 3}), "t <1>")
    assert "<script src" not in page and "https://" not in page and "t &lt;1&gt;" in page
    data = re.search(r'<script type="application/json" class="fg-data">(.*?)</script>', page, re.S)
    assert data is not None
    assert json.loads(data.group(1))["tree"]["c"][0]["c"][0]["n"] == "</script><b>.m"
