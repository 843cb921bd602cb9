"""bench compare on real trials (races against the session cluster, made once in tests/support/compare_trials.py)."""

from __future__ import annotations

import csv
import json

import pytest

from bench.cli import main
from tests.support.compare_trials import compare_trials, es_target_session  # noqa: F401 - fixtures

pytestmark = pytest.mark.cluster


@pytest.fixture
def trials(compare_trials, monkeypatch):  # noqa: F811
    monkeypatch.setenv("BENCH_HOME", str(compare_trials.home))
    return compare_trials


def _compare_json(tmp_path, *args: str) -> dict:
    out = tmp_path / "cmp.json"
    assert main(["compare", *args, "--format=json", f"--output={out}"]) == 0
    return json.loads(out.read_text())


def _row(data: dict, metric: str, task: str = "index", candidate: int = 0) -> dict:
    rows = [r for r in data["rows"] if r["metric"] == metric and r["task"] == task]
    return rows[candidate]


def test_two_stored_trials_in_every_format(trials, tmp_path, capsys):
    base, cand = trials.groups["g1"][0], trials.groups["g2"][0]
    outputs = {}
    for fmt in ("table", "markdown", "csv", "json"):
        out = tmp_path / f"cmp.{fmt}"
        assert main(["compare", base[:10], cand[:10], f"--format={fmt}", f"--output={out}"]) == 0
        outputs[fmt] = out.read_text()
    md = outputs["markdown"].splitlines()
    header = next(line for line in md if line.startswith("| Metric"))
    assert [h.strip() for h in header.strip("|").split("|")] == ["Metric", "Task", "Baseline", "Candidate", "Δ",
                                                                 "Δ %", "Unit", "Result"]
    assert md[md.index(header) + 1].startswith("|---")
    cells = [[c.strip() for c in line.strip("|").split("|")] for line in md if line.startswith("| ")]
    mean = next(c for c in cells if c[:2] == ["Mean Throughput", "index"])
    assert mean[6] == "docs/s" and mean[7] in ("better, not judged", "worse, not judged", "no change")
    assert any(c[0].startswith("Median CPU usage") for c in cells)  # telemetry rows: both trials have them
    assert "significance cannot be judged" in outputs["markdown"]
    assert "Mean Throughput" in outputs["table"] and "not judged" in outputs["table"]
    recs = list(csv.DictReader(outputs["csv"].splitlines()))
    mean = next(r for r in recs if r["metric"] == "Mean Throughput" and r["task"] == "index")
    assert float(mean["baseline_value"]) > 0 and float(mean["candidate_value"]) > 0
    data = json.loads(outputs["json"])
    assert data["baseline"]["trials"] == [base] and data["candidates"][0]["trials"] == [cand]
    # Without --output the terminal gets the table.
    capsys.readouterr()
    assert main(["compare", base, cand, "--all"]) == 0
    assert "Mean Throughput" in capsys.readouterr().out


def test_three_vs_three_of_one_configuration_is_within_noise(trials, tmp_path):
    data = _compare_json(tmp_path, "--baseline=tag:group=g1", "--candidate=tag:group=g2")
    row = _row(data, "Mean Throughput")
    assert row["baseline_n"] == 3 and row["candidate_n"] == 3 and row["ci_method"] == "welch"
    print(f"same configuration: {row['baseline_values']} vs {row['candidate_values']} docs/s, "
          f"diff {row['diff']:.0f}, CI [{row['ci_low']:.0f}, {row['ci_high']:.0f}]")
    assert row["ci_low"] <= 0 <= row["ci_high"]
    assert row["result"] == "within noise"


def test_a_genuinely_different_configuration_is_significant(trials, tmp_path):
    # Baseline 10 bulk requests/s, candidate 2.5/s: throughput is 4x lower -> a regression, judged by the CI.
    data = _compare_json(tmp_path, "--baseline=tag:rate=fast", "--candidate=tag:rate=slow")
    row = _row(data, "Mean Throughput")
    print(f"different configuration: {row['baseline_values']} vs {row['candidate_values']} docs/s, "
          f"CI [{row['ci_low']:.0f}, {row['ci_high']:.0f}]")
    assert row["ci_high"] < 0 and row["result"] == "regression"
    # Groups and single ids can be mixed with positional candidates; a bad selector is one line.
    assert main(["compare", "--baseline=tag:rate=fast", trials.groups["slow"][0]]) == 0


def test_bad_selectors_are_one_line_errors(trials, capsys):
    assert main(["compare", "--baseline=tag:rate=nope", "--candidate=tag:rate=slow"]) != 0
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "rate=nope" in err
    assert main(["compare", "--baseline=tag:rate", "--candidate=tag:rate=slow"]) == 2
    assert "KEY=VALUE" in capsys.readouterr().err
    assert main(["compare", trials.groups["g1"][0]]) == 2
