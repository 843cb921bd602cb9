"""What the report templates get (pure): the comparison headline with verdict classes and its markdown, and the
environment of many trials -- shared facts once, only differences per trial."""

from __future__ import annotations

from bench.compare import compare
from bench.reporting.context import compare_context, environment_summary
from tests.compare.test_compare_core import _side, _trial


def test_comparison_headline_cells_carry_their_verdict_colour():
    base = [_trial(i, 1000.0 + i, 5.0) for i in range(3)]
    cand = [_trial(10 + i, 800.0 + i, 5.0 + 0.5 * i) for i in range(3)]
    ctx = compare_context(compare(_side("base", base), [_side("cand", cand)]))
    head = ctx["headline"]
    assert head["title"] == "Headline: cand (3 trials) vs baseline base (3 trials)"
    [table] = head["tables"]
    rows = {r[0]: (r, c) for r, c in zip(table["rows"], table["classes"])}
    row, classes = rows["median throughput"]
    result = table["headers"].index("Result")
    assert row[result] == "regression" and classes[result] == "regression"
    assert classes[table["headers"].index("Δ %")] == "num regression"
    assert classes[:2] == ["", ""]  # metric and task: plain text
    row, classes = rows["p50 latency"]
    assert row[result] == "within noise" and classes[result] == "noise"
    assert head["sentences"] == ["cand vs base: median throughput of index −20.0 % (95 % CI −20.2 … −19.8 %, "
                                 "significant, worse)."]
    assert head["markdown"].startswith("## Headline: cand (3 trials) vs baseline base (3 trials)\n")
    assert "| **regression** |" in head["markdown"].replace("  ", " ").replace("  ", " ")


def _env(short_id: str, tags: str, status: str = "complete") -> dict:
    rows = [("Trial", f"{short_id}… ({status})"), ("Started", "2026-11-23"), ("Car", "defaults"),
            ("Track", "nginx / append"), ("User tags", tags)]
    return {"short_id": short_id, "start_time": f"2026-11-23 {short_id}", "status": status, "rows": rows}


def test_environment_of_many_trials_shows_shared_facts_once_and_only_differences_per_trial():
    sides = [{"label": "base", "trials": [_env(f"b{i}", "v=1") for i in range(5)]},
             {"label": "cand", "trials": [_env(f"c{i}", "v=2") for i in range(4)] + [_env("c4", "v=2", "failed")]}]
    env = environment_summary(sides, compare=True)
    assert env["common"] == [["Car", "defaults"], ["Track", "nginx / append"]]
    per = env["per_trial"]
    assert per["headers"] == ["Side", "Trial", "Started", "User tags", "Status"]
    assert len(per["rows"]) == 10
    assert per["rows"][0] == ["Baseline base", "b0", "2026-11-23 b0", "v=1", "complete"]
    assert per["rows"][9] == ["Candidate cand", "c4", "2026-11-23 c4", "v=2", "failed"]
    # Flagged where a trial differs from the baseline's first; its own id and start never are.
    assert per["changed"][0] == [False] * 5
    assert per["changed"][5] == [False, False, False, True, False]
    assert per["changed"][9] == [False, False, False, True, True]
    one = environment_summary([{"label": "x", "trials": [_env("b0", "v=1")]}], compare=False)
    assert one["per_trial"] is None and ["Trial", "b0… (complete)"] in one["common"]
