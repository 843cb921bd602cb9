"""OpenSearch Benchmark's query randomization: the Zipf repeat model, which values of which queries change, the
flags, and a race that randomizes a workload's range queries from its standard value source."""

from __future__ import annotations

import collections
import json
from pathlib import Path

import pytest

from bench.cli import main
from bench.driver.randomize import (
    DEFAULT_INFO,
    RandomizationInfo,
    RandomizedSearchSource,
    range_fields,
    set_values,
    zipf_cdf,
    zipf_index,
)
from bench.track.model import Operation, QueryRandomization, Task
from bench.trials.sqlite import TrialStore
from bench.util.errors import TrackError

QUERY = {"bool": {"filter": [{"range": {"n": {"gte": 1, "lt": 5, "format": "x"}}},
                             {"range": {"m": {"gte": 1}}},  # no upper bound: not randomized (OSB needs both)
                             {"term": {"k": "v"}}]}}


def test_zipf_index_is_osbs_inverse_cdf():
    cdf = zipf_cdf(3, 1.0)  # H = 1, 1.5, 1.8333
    assert cdf == pytest.approx([1 / 1.8333333, 1.5 / 1.8333333, 1.0])
    assert [zipf_index(u, cdf) for u in (0.0, 0.5, 0.55, 0.81, 0.82, 0.999)] == [0, 0, 1, 1, 2, 2]


def test_range_fields_and_values():
    q = json.loads(json.dumps(QUERY))
    fields = range_fields(q, DEFAULT_INFO)
    assert fields == [("n", ("bool", "filter", 0, "range"))]
    set_values(q, fields, [{"gte": 10, "lte": 20, "format": "y"}], DEFAULT_INFO)
    assert q["bool"]["filter"][0]["range"]["n"] == {"gte": 10, "lt": 20, "format": "y"}  # keeps the query's "lt"
    info = RandomizationInfo("range", [["gte"]], [])
    assert [f for f, _ in range_fields(QUERY, info)] == ["n", "m"]


def _task(n: int = 5) -> Task:
    return Task(name="t", operation=Operation(name="q", operation_type="search", params={
        "index": "i", "body": {"query": QUERY}}))


def test_repeats_follow_zipf_and_new_values_come_from_the_source():
    calls = iter(range(10**6))

    def source() -> dict:
        i = next(calls)
        return {"gte": i, "lte": i + 1}

    standard: dict = {}
    src = RandomizedSearchSource(_task(), QueryRandomization(repeat_frequency=1.0, n=5, alpha=1.0), DEFAULT_INFO,
                                 {"n": source}, standard, seed=1)
    assert [v["gte"] for v in standard["n"]] == [0, 1, 2, 3, 4]  # n standard values, generated once
    drawn = collections.Counter(json.loads(next(src)["_body_bytes"])["query"]["bool"]["filter"][0]["range"]["n"]["gte"]
                                for _ in range(20000))
    assert set(drawn) <= {0, 1, 2, 3, 4}
    assert drawn[0] / 20000 == pytest.approx(1 / (1 + 1 / 2 + 1 / 3 + 1 / 4 + 1 / 5), abs=0.015)
    fresh = RandomizedSearchSource(_task(), QueryRandomization(repeat_frequency=0.0, n=5), DEFAULT_INFO,
                                   {"n": source}, standard, seed=1)
    values = [json.loads(next(fresh)["_body_bytes"])["query"]["bool"]["filter"][0]["range"]["n"]["gte"]
              for _ in range(3)]
    assert values[0] >= 5 and values == [values[0], values[0] + 1, values[0] + 2]
    with pytest.raises(TrackError, match="register_standard_value_source\\('q', 'n', fn\\)"):
        RandomizedSearchSource(_task(), QueryRandomization(), DEFAULT_INFO, {}, {}, seed=1)


@pytest.mark.parametrize("flag, message", [("--randomization-repeat-frequency=1.5", "a share between 0 and 1"),
                                           ("--randomization-n=0", "positive number"),
                                           ("--randomization-alpha=0", "positive Zipf exponent")])
def test_bad_flags_are_one_line(tmp_path, capsys, flag, message):
    assert main(["--quiet", "race", f"--workload-path={tmp_path}", "--randomization-enabled", flag]) != 0
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and message in err, err


WORKLOAD_PY = '''
import itertools

_next = itertools.count()


def source():
    i = next(_next) % 50
    return {"gte": i, "lte": i + 2}


def register(registry):
    registry.register_standard_value_source("range-q", "n", source)
'''


def test_a_race_randomizes_range_queries(tmp_path: Path, es_target, capsys):
    root = tmp_path / "w"
    root.mkdir()
    (root / "workload.py").write_text(WORKLOAD_PY)
    (root / "workload.json").write_text(json.dumps({"version": 2, "indices": [], "corpora": [], "schedule": [
        {"operation": {"name": "range-q", "operation-type": "search", "index": "_all", "detailed-results": True,
                       "body": {"query": {"range": {"n": {"gte": 0, "lte": 1}}}}}, "iterations": 20, "clients": 2}]}))
    assert main(["--quiet", "race", f"--workload-path={root}", f"--target-hosts={es_target}",
                 "--randomization-enabled", "--randomization-n=10"]) == 0
    with TrialStore() as store:
        df = store.samples(store.list_trials()[0].id)
    assert len(df) == 40 and df["success"].all()
    # Without a source for the field the race stops in one line naming what to register.
    capsys.readouterr()
    (root / "workload.py").write_text("def register(registry):\n    pass\n")
    assert main(["--quiet", "race", f"--workload-path={root}", f"--target-hosts={es_target}",
                 "--randomization-enabled"]) != 0
    err = capsys.readouterr().err.strip()
    assert "register_standard_value_source('range-q', 'n', fn)" in err and "Traceback" not in err, err
    # ... and without a workload.py at all, before anything starts.
    (root / "workload.py").unlink()
    assert main(["--quiet", "race", f"--workload-path={root}", f"--target-hosts={es_target}",
                 "--randomization-enabled"]) != 0
    assert "needs a standard value source" in capsys.readouterr().err
