"""Parameter sources a track's ``track.py`` registers, in Rally's two forms.

- A function ``source(track, params, **kwargs) -> dict``: called for every request; it never ends by itself.
- A class: ``__init__(self, track, params, **kwargs)`` once per task in each worker process,
  ``partition(self, partition_index, total_partitions)`` once per client (returns the client's source),
  ``params(self)`` for every request; raising ``StopIteration`` ends the client's part of the task.
  ``infinite`` (or Rally's older ``size()`` returning None) says whether it ends by itself: a task without
  ``iterations`` or ``time-period`` runs once per client with an infinite source and until a finite one is
  exhausted. ``percent_completed`` is Rally's progress hint; bench's progress display counts requests instead.

``track`` is Rally's view of the track (``bench.track.rally_view``), ``params`` the operation's specification.
"""

from __future__ import annotations

import copy
import functools
import inspect
from collections.abc import Iterator
from typing import Any

from bench.driver.bulk.bodies import BulkBody
from bench.track.model import Task
from bench.track.rally_view import RallyTrack
from bench.util.errors import TrackError


class RallySource:
    """One client's parameters from a track's source; ``finite`` tells the client loop whether the source, not a
    count, ends the task."""

    def __init__(self, source: Any, finite: bool, task: Task, *, bench_bulk: bool) -> None:
        self.source = source  # what a scheduler with a ``parameter_source`` attribute gets
        self.finite = finite
        self._bulk = bench_bulk  # the parameters go to bench's own bulk runner: convert Rally's bulk shape

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return self

    def __next__(self) -> dict[str, Any]:
        p = self.source.params()  # StopIteration ends the client's task, as in Rally
        if not isinstance(p, dict):
            raise TrackError(f"parameter source {type(self.source).__name__}.params() returned "
                             f"{type(p).__name__}: it must return a dict")
        return bulk_params(p) if self._bulk else p


class _FunctionSource:
    """Rally's DelegatingParamSource: a function source, the same for every client."""

    def __init__(self, fn: Any, track: RallyTrack, params: dict[str, Any]) -> None:
        self._fn, self._track, self._params = fn, track, params
        self.infinite = True

    def partition(self, partition_index: int, total_partitions: int) -> "_FunctionSource":
        return self

    def params(self) -> dict[str, Any]:
        return self._fn(self._track, self._params)


def operation_spec(task: Task) -> dict[str, Any]:
    """What Rally passes track code as an operation's params: its whole specification, name and type included."""
    op = task.operation
    return {"name": op.name, "operation-type": op.operation_type, **copy.deepcopy(op.params)}


def make_source(factory: Any, name: str, track: RallyTrack, task: Task) -> Any:
    """The task-wide source (one per task and worker process, as Rally makes one per task and worker)."""
    params = operation_spec(task)
    try:
        if inspect.isfunction(factory):
            return _FunctionSource(factory, track, params)
        return factory(track, params)
    except TrackError:
        raise
    except Exception as e:  # noqa: BLE001 - track code: one line naming the source and the error
        raise TrackError(f"task '{task.name}': parameter source '{name}' ({getattr(factory, '__qualname__', factory)})"
                         f" failed to start: {type(e).__name__}: {e}") from None


def _finite(source: Any, task: Task, name: str) -> bool:
    if hasattr(source, "infinite"):
        return not bool(source.infinite)
    size = getattr(source, "size", None)
    if callable(size):
        return size() is not None
    if task.iterations is None and task.time_period is None:
        # Rally would fail here too: nothing says when the task ends.
        raise TrackError(f"task '{task.name}': parameter source '{name}' ({type(source).__name__}) has no "
                         f"'infinite' attribute and the task gives no iterations or time-period: say which ends it")
    return False


def client_source(source: Any, name: str, task: Task, client: int, *, bench_runner: bool) -> RallySource:
    """The client's partition of the task's source (``bench_runner``: bench's own runner takes its parameters)."""
    partition = getattr(source, "partition", None)
    try:
        part = partition(client, task.clients) if callable(partition) else source
    except Exception as e:  # noqa: BLE001 - track code: one line naming the source and the error
        raise TrackError(f"task '{task.name}': parameter source '{name}'.partition({client}, {task.clients}) "
                         f"failed: {type(e).__name__}: {e}") from None
    if not callable(getattr(part, "params", None)):
        raise TrackError(f"task '{task.name}': parameter source '{name}' ({type(part).__name__}) has no params() "
                         f"method")
    return RallySource(part, _finite(part, task, name), task,
                       bench_bulk=bench_runner and task.operation.operation_type == "bulk")


@functools.cache
def _ndjson() -> Any:
    from elasticsearch.serializer import NdjsonSerializer  # imported when a track's source makes bulks only

    return NdjsonSerializer()


def bulk_params(p: dict[str, Any]) -> dict[str, Any]:
    """Rally's bulk parameters (a body as str, bytes, or a list of lines as str, bytes or dicts, ``bulk-size`` documents, ``index`` when the
    lines carry no action-and-metadata) in the shape bench's bulk runner sends."""
    body = p.get("body")
    if isinstance(body, BulkBody):
        return p
    if not isinstance(body, (bytes, str, list, tuple)):
        raise TrackError(f"a bulk parameter source returned body of type {type(body).__name__}: use str, bytes or a "
                         f"list of lines (str, bytes or dicts)")
    from elastic_transport import SerializationError

    try:
        # elasticsearch-py's own NDJSON serializer, as Rally sends it: str/bytes lines as they are (a newline added
        # where one is missing), dicts as compact JSON (numpy numbers, dates and UUIDs included).
        body = _ndjson().dumps(body)
    except SerializationError as e:
        raise TrackError(f"a bulk parameter source returned a body that is not NDJSON: {e.message}") from None
    if "bulk-size" not in p:
        raise TrackError("a bulk parameter source returned no 'bulk-size' (the documents in its body)")
    path = "/_bulk?filter_path=errors,items.*.error"
    if not p.get("action-metadata-present", True) and p.get("index"):
        path = f"/{p['index']}" + path
    out = {k: v for k, v in p.items() if k != "body"}
    out["body"] = BulkBody(body, int(p["bulk-size"]), len(body), False)
    out["path"] = path
    return out
