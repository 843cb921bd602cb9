"""A track's own Python code (track.py, Rally's register(registry) API) in real races against a real cluster:
param sources (nested's randomized queries really differ), runners with the real elasticsearch-py client and
every result form, multi-cluster runners, schedulers, track processors, worker processes, scoping between tracks,
and each way track code can be wrong as one line."""

from __future__ import annotations

import json
import random
import textwrap
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from bench.cli import main
from bench.track.loader import load_track
from bench.trials.sqlite import TrialStore
from bench.util.errors import TrackError

pytestmark = pytest.mark.timeout(400)

TAGS = [f"tag{i}" for i in range(12)]

# A look-alike of rally-tracks' nested track: StackOverflow-like questions with nested answers, and a track.py whose
# param sources pick a random tag / date from queries.csv for every request.
NESTED_INDEX = {
    "settings": {"index.number_of_shards": 1, "index.number_of_replicas": 0},
    "mappings": {"dynamic": "strict", "properties": {
        "qid": {"type": "keyword"}, "tag": {"type": "keyword"}, "title": {"type": "text"},
        "answers": {"type": "nested", "properties": {"user": {"type": "keyword"}, "date": {"type": "date"}}}}},
}

NESTED_TRACK_PY = '''
import csv
import os
import random


class QuerySource:
    def __init__(self, track, params, **kwargs):
        self._params = params
        self.index = track.indices[0].name
        self.infinite = True
        self.tags, self.dates = [], []
        with open(os.path.join(os.path.dirname(__file__), "queries.csv")) as f:
            for tag, date in csv.reader(f):
                self.tags.append(tag)
                self.dates.append(date)
        self.rnd = random.Random(7)

    def partition(self, partition_index, total_partitions):
        return self


class TermQuerySource(QuerySource):
    def params(self):
        return {"index": None, "type": None, "cache": self._params.get("cache"),
                "body": {"query": {"match": {"tag": self.rnd.choice(self.tags)}}}}


class NestedQuerySource(QuerySource):
    def params(self):
        return {"index": self.index, "cache": None, "body": {"size": self._params["size"], "query": {"bool": {"must": [
            {"match": {"tag": self.rnd.choice(self.tags)}},
            {"nested": {"path": "answers", "query": {"range": {"answers.date": {"lte": self.rnd.choice(self.dates)}}}}},
        ]}}}}


def register(registry):
    registry.register_param_source("nested-query-source", NestedQuerySource)
    registry.register_param_source("term-query-source", TermQuerySource)
'''


def write(root: Path, files: dict[str, Any]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        text = content if isinstance(content, str) else json.dumps(content)
        (root / name).write_text(textwrap.dedent(text) if name.endswith(".py") else text)
    return root


def nested_track(root: Path, docs: int = 400) -> Path:
    rnd = random.Random(3)
    lines = []
    for i in range(docs):
        answers = [{"user": f"u{rnd.randrange(50)}", "date": f"20{rnd.randrange(10, 20)}-0{rnd.randrange(1, 9)}-1{rnd.randrange(0, 9)}"}
                   for _ in range(rnd.randrange(0, 6))]
        lines.append(json.dumps({"qid": str(i), "tag": rnd.choice(TAGS), "title": f"question {i}", "answers": answers}))
    queries = "\n".join(f"{t},20{rnd.randrange(10, 20)}-06-15" for t in TAGS for _ in range(2)) + "\n"
    search = {"clients": 2, "iterations": 30}
    return write(root, {
        "index.json": NESTED_INDEX, "documents.json": "\n".join(lines) + "\n", "queries.csv": queries,
        "track.py": NESTED_TRACK_PY,
        "track.json": {
            "indices": [{"name": "sonested", "body": "index.json"}],
            "corpora": [{"name": "test-track-code-nested", "documents": [{"source-file": "documents.json", "document-count": docs}]}],
            "operations": [
                {"name": "randomized-nested-queries", "operation-type": "search",
                 "param-source": "nested-query-source", "size": 5},
                {"name": "randomized-term-queries", "operation-type": "search", "param-source": "term-query-source",
                 "cache": False},
                {"name": "match-all", "operation-type": "search", "body": {"query": {"match_all": {}}}},
            ],
            "schedule": [
                {"operation": {"operation-type": "delete-index"}},
                {"operation": {"operation-type": "create-index"}},
                {"operation": {"operation-type": "bulk", "bulk-size": 100}, "clients": 2},
                {"operation": "refresh"},
                {"operation": "randomized-nested-queries", **search},
                {"operation": "randomized-term-queries", **search},
                {"operation": "match-all", **search},
            ],
        },
    })


def race(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    rc = main(["--quiet", "race", *args])
    return rc, capsys.readouterr().err


def one_line(err: str, *needles: str) -> str:
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    for n in needles:
        assert n in lines[0], lines[0]
    return lines[0]


def samples() -> pd.DataFrame:
    with TrialStore() as store:
        trials = store.list_trials()
        return store.samples(trials[0].id)


def test_nested_param_sources_send_different_queries(tmp_path: Path, es_target: str,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    track = nested_track(tmp_path / "nested")
    rc, err = race(capsys, f"--track-path={track}", f"--target-hosts={es_target}", "--worker-processes=2")
    assert rc == 0, err
    df = samples()
    for task in ("randomized-nested-queries", "randomized-term-queries"):
        t = df[df["task"] == task]
        assert len(t) == 60 and t["success"].all(), t
        # Different tags and dates answer with different hits: the answers differ in size by far more than the
        # few bytes the "took" field varies by.
        sizes = t["bytes_received"]
        assert sizes.nunique() >= 5 and sizes.max() - sizes.min() > 200, sizes.value_counts()
        assert set(t["client_id"]) == {0, 1}
    match_all = df[df["task"] == "match-all"]["bytes_received"]
    assert len(match_all) == 60 and match_all.max() - match_all.min() <= 3  # one answer, only "took" varies


RUNNERS_TRACK_PY = '''
import json
import os

HERE = os.path.dirname(__file__)


async def count_docs(es, params):
    found = await es.count(index=params["index"])
    return {"weight": 3, "unit": "docs", "hits": found["count"], "operation": params["operation-type"]}


async def missing_index(es, params):
    await es.indices.get(index="no-such-index-here")


async def refuse(es, params):
    return {"success": False, "error-type": "custom", "error-description": "the runner said no"}


async def as_tuple(es, params):
    await es.cluster.health()
    return 7, "widgets"


class ClusterName:
    def __init__(self):
        self.entered = 0
        self.exited = 0

    async def __aenter__(self):
        self.entered += 1
        return self

    async def __aexit__(self, exc_type, exc, tb):
        self.exited += 1
        return False

    async def __call__(self, es, params):
        health = await es.cluster.health()  # (GET / answers 405 on this Elasticsearch build)
        return {"cluster": health["cluster_name"], "entered": self.entered, "exited": self.exited}


class EveryCluster:
    multi_cluster = True

    async def __call__(self, es, params):
        healths = {name: (await client.cluster.health())["status"] for name, client in es.items()}
        return {"weight": len(healths), "unit": "ops", "clusters": sorted(healths)}


class Countdown:
    """Five parameter sets per client, then StopIteration: the source, not a count, ends the task."""

    def __init__(self, track, params, **kwargs):
        self.index = params["index"]
        self.left = 5
        self.client = None
        self.infinite = False

    def partition(self, partition_index, total_partitions):
        part = Countdown.__new__(Countdown)
        part.index, part.left, part.client, part.infinite = self.index, 5, partition_index, False
        return part

    @property
    def percent_completed(self):
        return (5 - self.left) / 5

    def params(self):
        if self.left == 0:
            raise StopIteration()
        self.left -= 1
        return {"index": self.index, "operation-type": "count-docs"}


class Growing:
    """A full scheduler: gaps of 20, 40, 60 ... ms, and it sees every response."""

    def __init__(self, task):
        self.n = 0
        self.weights = []
        self.parameter_source = None

    def before_request(self, now):
        pass

    def after_request(self, now, weight, unit, request_meta_data):
        self.weights.append((weight, unit))

    def next(self, current):
        self.n += 1
        return current + 0.02 * self.n if self.n > 1 else 0.0


class FixedGap:
    """A simple scheduler: Rally's (task, target_throughput) form."""

    def __init__(self, task, target_throughput):
        self.gap = 1 / target_throughput

    def next(self, current):
        return current + self.gap


class Recorder:
    def on_after_load_track(self, track):
        seen = {"name": track.name, "indices": [i.name for i in track.indices],
                "challenge": track.selected_challenge_or_default.name,
                "docs": [d.number_of_documents for c in track.corpora for d in c.documents]}
        with open(os.path.join(HERE, "after-load.json"), "w") as f:
            json.dump(seen, f)

    def on_prepare_track(self, track, data_root_dir):
        yield write_marker, {"path": os.path.join(HERE, "prepared.txt"), "text": data_root_dir}


class TwoDocBulks:
    """Rally's bulk parameters (lines with action-and-metadata) for bench's own bulk runner: three bulks."""

    def __init__(self, track, params, **kwargs):
        self.index = params["index"]
        self.sent = 0
        self.infinite = False

    def partition(self, partition_index, total_partitions):
        return self

    def params(self):
        if self.sent == 3:
            raise StopIteration()
        self.sent += 1
        lines = []
        for i in range(2):
            lines += [json.dumps({"index": {"_index": self.index}}), json.dumps({"n": 1000 + self.sent * 10 + i})]
        return {"body": lines, "bulk-size": 2, "unit": "docs", "action-metadata-present": True}


def write_marker(path, text):
    with open(path, "w") as f:
        f.write(text)


def register(registry):
    registry.register_runner("count-docs", count_docs, async_runner=True)
    registry.register_runner("missing-index", missing_index, async_runner=True)
    registry.register_runner("refuse", refuse, async_runner=True)
    registry.register_runner("as-tuple", as_tuple, async_runner=True)
    registry.register_runner("cluster-name", ClusterName(), async_runner=True)
    registry.register_runner("every-cluster", EveryCluster(), async_runner=True)
    registry.register_param_source("countdown", Countdown)
    registry.register_param_source("two-doc-bulks", TwoDocBulks)
    registry.register_scheduler("growing", Growing)
    registry.register_scheduler("fixed-gap", FixedGap)
    registry.register_track_processor(Recorder())
'''


def runners_track(root: Path) -> Path:
    docs = "".join(json.dumps({"n": i}) + "\n" for i in range(50))
    return write(root, {
        "documents.json": docs, "track.py": RUNNERS_TRACK_PY,
        "track.json": {
            "indices": [{"name": "code-index"}],
            "corpora": [{"name": "test-track-code-runners", "documents": [{"source-file": "documents.json", "document-count": 50}]}],
            "challenges": [{"name": "custom", "default": True, "schedule": [
                {"operation": {"operation-type": "delete-index"}},
                {"operation": {"operation-type": "create-index"}},
                {"operation": {"operation-type": "bulk", "bulk-size": 50, "refresh": "true"}},
                {"name": "count", "operation": {"operation-type": "count-docs", "index": "code-index"},
                 "iterations": 4},
                {"name": "missing", "operation": {"operation-type": "missing-index"}, "iterations": 2},
                {"name": "refused", "operation": {"operation-type": "refuse"}},
                {"name": "tuple", "operation": {"operation-type": "as-tuple"}, "iterations": 2},
                {"name": "class", "operation": {"operation-type": "cluster-name"}, "iterations": 3},
                {"name": "multi", "operation": {"operation-type": "every-cluster"}},
                {"name": "countdown", "operation": {"operation-type": "count-docs", "param-source": "countdown",
                                                    "index": "code-index"}, "clients": 2},
                {"name": "growing", "operation": {"operation-type": "as-tuple"}, "schedule": "growing",
                 "iterations": 5},
                {"name": "fixed", "operation": {"operation-type": "as-tuple"}, "schedule": "fixed-gap",
                 "target-throughput": 20, "iterations": 6},
                {"name": "bulk-from-source", "operation": {"operation-type": "bulk", "param-source": "two-doc-bulks",
                                                           "index": "code-index"}},
                {"operation": "refresh"},
                {"name": "recount", "operation": {"operation-type": "count-docs", "index": "code-index"}},
            ]}],
        },
    })


def test_runners_schedulers_and_processors_of_track_py(tmp_path: Path, es_target: str,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    track = runners_track(tmp_path / "custom")
    hosts = f"default:{es_target},other:{es_target}"
    rc, err = race(capsys, f"--track-path={track}", f"--target-hosts={hosts}", "--worker-processes=2")
    # Two tasks fail on purpose (every request), so the race is 'not measured' for them (docs: exit codes).
    assert rc == 4 and "task 'missing'" in err and "task 'refused'" in err, err
    df = samples()

    def task(name: str) -> pd.DataFrame:
        return df[df["task"] == name].sort_values("absolute_time")

    count = task("count")
    assert len(count) == 4 and count["success"].all()
    assert set(count["units"]) == {3} and set(count["unit"]) == {"docs"}
    assert [json.loads(m) for m in count["meta"]] == [{"hits": 50, "operation": "count-docs"}] * 4

    missing = task("missing")
    assert len(missing) == 2 and not missing["success"].any()
    assert set(missing["error_type"]) == {"http-404"} and set(missing["status"]) == {404}
    assert "index_not_found_exception" in missing["error"].iloc[0]

    refused = task("refused")
    assert len(refused) == 1 and not refused["success"].iloc[0]
    assert refused["error_type"].iloc[0] == "custom" and refused["error"].iloc[0] == "the runner said no"

    tup = task("tuple")
    assert list(tup["units"]) == [7, 7] and set(tup["unit"]) == {"widgets"} and tup["meta"].isna().all()

    cls = task("class")
    metas = [json.loads(m) for m in cls["meta"]]
    assert [m["entered"] - m["exited"] for m in metas] == [1, 1, 1]  # entered around every call
    assert sorted(m["entered"] for m in metas) == [1, 2, 3]

    multi = task("multi")
    assert len(multi) == 1 and json.loads(multi["meta"].iloc[0]) == {"clusters": ["default", "other"]}
    assert multi["units"].iloc[0] == 2

    countdown = task("countdown")
    assert len(countdown) == 10 and sorted(countdown["client_id"].value_counts()) == [5, 5]

    growing = task("growing")
    gaps = growing["absolute_time"].diff().dropna().round(4).tolist()
    assert gaps == [0.04, 0.06, 0.08, 0.1]  # the scheduler's own due times, not bench's schedule
    fixed = task("fixed")
    # The first request goes out at once; the scheduler made from its weight spaces the rest at 1/20 s.
    assert fixed["absolute_time"].diff().dropna().round(4).tolist() == [0.05] * 5

    bulks = task("bulk-from-source")
    assert len(bulks) == 3 and bulks["success"].all() and set(bulks["units"]) == {2} and set(bulks["unit"]) == {"docs"}
    assert json.loads(task("recount")["meta"].iloc[0])["hits"] == 56  # 50 from the corpus, 6 from the source

    seen = json.loads((track / "after-load.json").read_text())
    assert seen == {"name": "custom", "indices": ["code-index"], "challenge": "custom", "docs": [50]}
    assert (track / "prepared.txt").read_text().endswith("data")


def test_a_second_track_does_not_see_the_first_ones_registrations(tmp_path: Path) -> None:
    helper = 'VALUE = "{}"\n'
    code = '''
    import helpers

    async def probe(es, params):
        return {{"from": helpers.VALUE}}

    def register(registry):
        registry.register_runner("{}", probe, async_runner=True)
    '''
    a = write(tmp_path / "a", {"helpers.py": helper.format("a"), "track.py": code.format("only-a"),
                               "track.json": {"schedule": [{"operation": {"operation-type": "only-a"}}]}})
    b = write(tmp_path / "b", {"helpers.py": helper.format("b"), "track.py": code.format("only-b"),
                               "track.json": {"schedule": [{"operation": {"operation-type": "only-a"}}]}})
    load_track(a, {}, check_challenge=True)
    with pytest.raises(TrackError, match="operation 'only-a' has unsupported operation-type 'only-a'"):
        load_track(b, {}, check_challenge=True)
    from bench.track.plugins import load_plugins

    pa, pb = load_plugins(a), load_plugins(b)
    assert pa is not None and pb is not None
    assert pa.runners["only-a"].runner.__globals__["helpers"].VALUE == "a"
    assert pb.runners["only-b"].runner.__globals__["helpers"].VALUE == "b"  # its own helpers module


CASES = {
    "syntax": ({"track.py": "def register(registry)\n    pass\n"}, ("track.py:1", "syntax error")),
    "raises on import": ({"track.py": "x = 1\ny = x / 0\n"}, ("track.py:2", "ZeroDivisionError")),
    "esrally": ({"track.py": "from esrally.mechanic import team\n"}, ("track.py:1", "esrally", "does not provide")),
    "no register": ({"track.py": "X = 1\n"}, ("track.py", "no register(registry) function")),
    "register raises": ({"track.py": "def register(registry):\n    raise ValueError('bad setup')\n"},
                        ("track.py:2", "register(registry)", "ValueError: bad setup")),
    "sync runner": ({"track.py": "def r(es, params):\n    pass\n\ndef register(registry):\n"
                                 "    registry.register_runner('x', r, async_runner=True)\n"},
                    ("track.py", "register_runner('x', ...)", "async")),
    "no async_runner": ({"track.py": "async def r(es, params):\n    pass\n\ndef register(registry):\n"
                                     "    registry.register_runner('x', r)\n"}, ("async_runner=True",)),
    "changing processor": ({"track.py": "class P:\n    def on_after_load_track(self, track):\n"
                                        "        track.indices.clear()\n\ndef register(registry):\n"
                                        "    registry.register_track_processor(P())\n"},
                           ("track processor P changed the track",)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_broken_track_code_is_one_line(case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files, needles = CASES[case]
    track = write(tmp_path / "t", {**files, "track.json": {"indices": [{"name": "i"}],
                                                           "schedule": [{"operation": "refresh"}]}})
    rc, err = race(capsys, f"--track-path={track}", "--target-hosts=127.0.0.1:9")
    assert rc == 2
    one_line(err, *needles)


REGISTERS_A = "async def r(es, params):\n    pass\n\ndef register(registry):\n" \
              "    registry.register_param_source('a', lambda track, params, **kw: {})\n"


SIMPLE_GAP = "class Gap:\n    def __init__(self, task, target_throughput):\n        pass\n\n" \
             "    def next(self, current):\n        return current\n\n" \
             "def register(registry):\n    registry.register_scheduler('gap', Gap)\n"


@pytest.mark.parametrize("files,task,needles", [
    ({"track.py": REGISTERS_A}, {"name": "q", "operation": {"operation-type": "search", "param-source": "nope"}},
     ("track.json: challenge 'default', task 'q'", "param-source 'nope'", "track.py does not register",
      "it registers: a")),
    ({}, {"name": "q", "operation": {"operation-type": "search", "param-source": "nope"}},
     ("challenge 'default', task 'q'", "param-source 'nope'", "it has no track.py")),
    ({"track.py": REGISTERS_A}, {"name": "s", "operation": "refresh", "schedule": "weekly-pattern"},
     ("challenge 'default', task 's'", "schedule 'weekly-pattern'", "unknown schedule")),
    ({"track.py": SIMPLE_GAP}, {"name": "s", "operation": "refresh", "schedule": "gap"},
     ("challenge 'default', task 's'", "schedule 'gap' (Gap) paces a target throughput")),
])
def test_an_unregistered_construct_is_a_load_time_error(files: dict[str, Any], task: dict[str, Any],
                                                        needles: tuple[str, ...], tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    track = write(tmp_path / "t", {**files, "track.json": {"schedule": [task]}})
    rc, err = race(capsys, f"--track-path={track}", "--target-hosts=127.0.0.1:9")
    assert rc == 2
    one_line(err, *needles)


def test_a_runner_missing_a_parameter_stops_the_race_in_one_line(tmp_path: Path, es_target: str,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    code = "async def needs(es, params):\n    return params['index']\n\ndef register(registry):\n" \
           "    registry.register_runner('needs', needs, async_runner=True)\n"
    track = write(tmp_path / "t", {"track.py": code, "track.json": {"schedule": [
        {"name": "n", "operation": {"operation-type": "needs"}}]}})
    rc, err = race(capsys, f"--track-path={track}", f"--target-hosts={es_target}")
    assert rc != 0
    one_line(err, "runner needs of operation type 'needs' needs the parameter 'index'")
