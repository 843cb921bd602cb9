"""Track code that imports Rally's own modules (``esrally``), as many tracks of elastic/rally-tracks do, loads and
runs against a real cluster: exceptions, ``ParamSource`` with Rally's corpus readers (``bounds``, ``Slice``,
``chain``, ``io.MmapSource`` through ``from esrally.track.params import *``), ``loader.TrackProcessor`` rewriting
operation params (http_logs' runtime-field resolver), ``DefaultTrackPreparator``, ``runner.Runner`` with
``mandatory`` and ``_transport_request_params``, and ``PutSettings``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from bench.track.loader import load_track
from bench.util.errors import TrackError
from tests.track.test_track_code import one_line, race, samples, write

pytestmark = pytest.mark.timeout(300)

EVENTS = 21  # split over 2 clients by Rally's bounds(): 10 and 11 (rounded boundaries)

TRACK_PY = '''
import json
import re
from copy import copy

from esrally import exceptions
from esrally.driver import runner
from esrally.driver.runner import PutSettings
from esrally.track import loader
from esrally.track.params import *


class EventSource(ParamSource):
    """behavioral_analytics' shape: partitioned corpus reading with Rally's helpers."""

    def __init__(self, track, params, **kwargs):
        super().__init__(track, params, **kwargs)
        if not track.corpora:
            raise exceptions.InvalidSyntax(f"no corpus in track {track}")
        self.corpora = track.corpora  # Rally prepares the corpora a source names here
        self.docs = track.corpora[0].documents[0]

    @property
    def infinite(self):  # Rally's ParamSource.infinite is a read-only property: subclasses override it
        return False

    def partition(self, partition_index, total_partitions):
        part = EventSource(self.track, self._params)  # one source per client, as Rally asks
        offset, docs, lines = bounds(self.docs.number_of_documents, partition_index, partition_index,
                                     total_partitions, False)
        part.slice = Slice(io.MmapSource, offset, lines)
        part.events = None
        part.sent = 0
        part.total = docs
        return part

    def params(self):
        if self.events is None:
            self.slice.open(self.docs.document_file, "rt", 4)
            self.events = chain(_Reader(self.slice))
        line = next(self.events)  # StopIteration ends the task
        self.sent += 1
        return {"method": "POST", "path": "/events/_doc?refresh=true", "body": json.loads(line)}

    @property
    def percent_completed(self):
        return self.sent / self.total


class _Reader:
    def __init__(self, source):
        self.source = source

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.source.close()
        return False

    def __iter__(self):
        for batch in self.source:
            yield from batch


class CountHits(runner.Runner):
    """wikipedia's shape: a Runner subclass with mandatory() and _transport_request_params()."""

    async def __call__(self, es, params):
        params, request_params, transport_params, headers = self._transport_request_params(params)
        body = runner.mandatory(params, "body", self)
        es = es.options(**transport_params)
        result = await es.search(index=params["index"], body=body, headers=headers or None)
        return {"weight": 1, "unit": "ops", "hits": result["hits"]["total"]["value"]}

    def __repr__(self):
        return "count-hits"


async def read_setting(es, params):
    s = await es.cluster.get_settings()
    return {"weight": 1, "unit": "ops", "value": s["persistent"]["cluster"]["routing"]["allocation"]["node_concurrent_recoveries"]}


class FieldResolver(loader.TrackProcessor):
    """http_logs' RuntimeFieldResolver shape: rewrites field names in the params of tasks named by a pattern."""
    PATTERN = re.compile(".+-from-(.+)-using-(.+)")

    def on_after_load_track(self, t):
        for challenge in t.challenges:
            for task in challenge.schedule:
                m = self.PATTERN.match(task.name)
                if m is not None:
                    task.operation = copy(task.operation)
                    task.operation.params = self._replace(f"{m[2]}.from_{m[1]}.", task.operation.params)

    def _replace(self, field, t):
        if t == "status":
            return field + t
        if isinstance(t, list):
            return [self._replace(field, v) for v in t]
        if isinstance(t, dict):
            return {self._replace(field, k): self._replace(field, v) for k, v in t.items()}
        return t


def register(registry):
    registry.register_param_source("event-source", EventSource)
    registry.register_runner("count-hits", CountHits(), async_runner=True)
    registry.register_runner("read-setting", read_setting, async_runner=True)
    registry.register_track_processor(FieldResolver())
    registry.register_track_processor(loader.DefaultTrackPreparator())
    try:
        from esrally.driver.runner import PutSettings as _present
    except ImportError:
        raise exceptions.SystemSetupError("PutSettings missing")
    registry.register_runner("apply-settings", PutSettings(), async_runner=True)
'''


def rally_like_track(root: Path) -> Path:
    events = "".join(json.dumps({"n": i, "status": 200 + i % 2}) + "\n" for i in range(EVENTS))
    docs = [{"status": 200}] * 5 + [{"alt": {"from_copy": {"status": 404}}}] * 3
    logs = "".join(json.dumps(d) + "\n" for d in docs)
    count = {"operation-type": "count-hits", "index": "logs", "body": {"query": {"term": {"status": 404}}},
             "request-timeout": 30}
    return write(root, {
        "track.py": TRACK_PY, "events.json": events, "logs.json": logs,
        "track.json": {
            "indices": [{"name": "events"}, {"name": "logs"}],
            "corpora": [{"name": "test-esrally-events",
                         "documents": [{"source-file": "events.json", "document-count": EVENTS,
                                        "target-index": "events"}]},
                        {"name": "test-esrally-logs",
                         "documents": [{"source-file": "logs.json", "document-count": len(docs),
                                        "target-index": "logs"}]}],
            "operations": [
                {"name": "ingest-events", "operation-type": "raw-request", "param-source": "event-source"},
                {"name": "count-404", **count},
                {"name": "count-404-from-copy-using-alt", **count},
            ],
            "schedule": [
                {"operation": {"operation-type": "delete-index"}},
                {"operation": {"operation-type": "create-index"}},
                {"operation": "ingest-events", "clients": 2},
                {"operation": {"name": "logs-bulk", "operation-type": "bulk", "bulk-size": 10,
                               "corpora": "test-esrally-logs"}},
                {"operation": "refresh"},
                {"operation": "count-404"},
                {"operation": "count-404-from-copy-using-alt"},
                {"operation": {"name": "settings", "operation-type": "apply-settings",
                               "body": {"persistent": {"cluster.routing.allocation.node_concurrent_recoveries": 3}}}},
                {"operation": {"name": "read", "operation-type": "read-setting"}},
                {"operation": {"name": "reset", "operation-type": "apply-settings",
                               "body": {"persistent": {"cluster.routing.allocation.node_concurrent_recoveries": None}}}},
            ],
        },
    })


def test_track_code_importing_esrally_runs_against_a_real_cluster(tmp_path: Path, es_target: str,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    track = rally_like_track(tmp_path / "rallylike")
    rc, err = race(capsys, f"--track-path={track}", f"--target-hosts={es_target}", "--worker-processes=2")
    assert rc == 0, err
    df = samples()

    def task(name: str):
        return df[df["task"] == name]

    ingest = task("ingest-events")
    assert len(ingest) == EVENTS and ingest["success"].all()
    # bounds() splits 21 documents at round(10.5) = 10 (Python rounds half to even): 10 and 11 per client
    assert sorted(ingest["client_id"].value_counts()) == [10, 11]
    hits = {name: json.loads(task(name)["meta"].iloc[0])["hits"] for name in ("count-404",
                                                                             "count-404-from-copy-using-alt")}
    # The processor rewrote the query of the task its pattern names only: the untouched one finds no 404 in
    # "status", the rewritten one finds the three in "alt.from_copy.status".
    assert hits == {"count-404": 0, "count-404-from-copy-using-alt": 3}
    assert json.loads(task("read")["meta"].iloc[0])["value"] == "3"
    assert task("settings")["success"].all() and task("reset")["success"].all()


def test_the_events_reached_the_cluster_once_each(tmp_path: Path, es_target: str,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    track = rally_like_track(tmp_path / "rallylike")
    rc, err = race(capsys, f"--track-path={track}", f"--target-hosts={es_target}")
    assert rc == 0, err
    from elasticsearch import Elasticsearch

    with Elasticsearch(f"http://{es_target.split(',')[0]}") as es:
        res = es.search(index="events", size=0, aggs={"n": {"cardinality": {"field": "n"}}})
    assert res["hits"]["total"]["value"] == EVENTS and res["aggregations"]["n"]["value"] == EVENTS


def test_a_processor_changing_more_than_operation_params_is_refused(tmp_path: Path) -> None:
    code = ("from esrally.track import loader\n\nclass P(loader.TrackProcessor):\n"
            "    def on_after_load_track(self, track):\n        track.indices[0].name = 'other'\n\n"
            "def register(registry):\n    registry.register_track_processor(P())\n")
    track = write(tmp_path / "t", {"track.py": code, "track.json": {"indices": [{"name": "i"}],
                                                                     "schedule": [{"operation": "refresh"}]}})
    with pytest.raises(TrackError, match="changed the track in on_after_load_track beyond tasks' operation params"):
        load_track(track, {})


def test_a_missing_esrally_name_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    track = write(tmp_path / "t", {"track.py": "from esrally.mechanic import team\n",
                                   "track.json": {"indices": [{"name": "i"}], "schedule": [{"operation": "refresh"}]}})
    rc, err = race(capsys, f"--track-path={track}", "--target-hosts=127.0.0.1:9")
    assert rc == 2
    one_line(err, "track.py:1", "esrally.mechanic", "install esrally")


def test_esrally_resolves_to_one_module_per_name() -> None:
    from bench.compat import names as esrally_names

    esrally_names.install()
    import esrally.exceptions
    import esrally.track.params as params

    import bench.compat.esrally.exceptions as own

    # One module object under both names: an exception raised by bench's side is caught by the track's name.
    assert esrally.exceptions is own and params.exceptions is own
    assert sys.modules["esrally.track.params"].__name__ == "bench.compat.esrally.track.params"
    assert params.bounds(10, 1, 1, 3, True) == (6, 4, 8)
