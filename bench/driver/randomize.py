"""OpenSearch Benchmark's query randomization (osbenchmark/workload/loader.py, ``QueryRandomizerWorkloadProcessor``):
each search of a task gets new values in its range queries, so the cluster's caches see a realistic mix of repeated
and new queries.

For each request: with probability ``repeat_frequency`` the values are the ``i``-th of ``n`` standard values
generated up front (``i`` drawn from a Zipf distribution of exponent ``alpha``, so a few values repeat often),
otherwise new values from the workload's standard value source (``register_standard_value_source(op, field, fn)``
in ``workload.py``). Which queries and parameters change: ``register_query_randomization_info``, by default
``range`` queries' ``gte``/``gt`` and ``lte``/``lt`` (and ``format`` when the source gives one). One draw serves
every field of a query, as in OSB.
"""

from __future__ import annotations

import bisect
import copy
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from bench.driver.runners.core import search_body
from bench.track.formats import format_at
from bench.track.model import Challenge, QueryRandomization, Task, Track
from bench.util.errors import TrackError


@dataclass(frozen=True)
class RandomizationInfo:
    """Which values to replace: in ``query_name`` queries, one of each option list (the first option is the key
    the standard value source returns), and the optional parameters when present."""

    query_name: str
    parameter_name_options_list: list[list[str]]
    optional_parameters: list[str]

    def complete(self, obj: Any) -> bool:
        return isinstance(obj, dict) and all(any(o in obj for o in opts) for opts in self.parameter_name_options_list)


DEFAULT_INFO = RandomizationInfo("range", [["gte", "gt"], ["lte", "lt"]], ["format"])


def zipf_cdf(n: int, alpha: float) -> list[float]:
    """The Zipf CDF over ranks 1..n: H(i, alpha) / H(n, alpha)."""
    h, acc = [], 0.0
    for i in range(1, n + 1):
        acc += 1.0 / i ** alpha
        h.append(acc)
    return [x / acc for x in h]


def zipf_index(u: float, cdf: list[float]) -> int:
    """OSB's inverse CDF (the smallest rank whose CDF exceeds ``u``), as a 0-based index."""
    return min(bisect.bisect_right(cdf, u), len(cdf) - 1)


def range_fields(query: Any, info: RandomizationInfo, path: tuple[Any, ...] = ()) -> list[tuple[str, tuple[Any, ...]]]:
    """(field, path to its ``query_name`` object) of every randomizable query, in document order."""
    if isinstance(query, dict) and query:
        if path and path[-1] == info.query_name:
            return [(k, path) for k, v in query.items() if info.complete(v)]
        return [f for k, v in query.items() for f in range_fields(v, info, (*path, k))]
    if isinstance(query, list):
        return [f for i, v in enumerate(query) for f in range_fields(v, info, (*path, i))]
    return []


def _at(root: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        root = root[key]
    return root


def set_values(query: dict[str, Any], fields: list[tuple[str, tuple[Any, ...]]], values: list[dict[str, Any]],
               info: RandomizationInfo) -> None:
    for (name, path), value in zip(fields, values, strict=True):
        section = _at(query, path)[name]
        for options in info.parameter_name_options_list:
            for option in options:
                if option in section:
                    section[option] = value[options[0]]
        for optional in info.optional_parameters:
            if optional in value:
                section[optional] = value[optional]


class RandomizedSearchSource(Iterator[dict[str, Any]]):
    """A search client's requests with randomized values (``standard``: the task's standard values per field,
    shared by the worker's clients)."""

    def __init__(self, task: Task, spec: QueryRandomization, info: RandomizationInfo,
                 sources: dict[str, Callable[[], dict[str, Any]]], standard: dict[str, list[dict[str, Any]]],
                 seed: int) -> None:
        self.params = dict(task.operation.params)
        body = self.params.get("body")
        if not isinstance(body, dict) or not isinstance(body.get("query"), dict):
            raise TrackError(f"task '{task.name}': query randomization needs the operation's body.query")
        self.fields = range_fields(body["query"], info)
        for name, _ in self.fields:
            if name not in sources:
                raise TrackError(f"task '{task.name}': query randomization of field '{name}' needs a standard value "
                                 f"source: register_standard_value_source('{task.operation.name}', '{name}', fn) in "
                                 f"workload.py")
            if name not in standard:
                standard[name] = [sources[name]() for _ in range(spec.n)]
        self.spec, self.info, self.sources, self.standard = spec, info, sources, standard
        self.cdf = zipf_cdf(spec.n, spec.alpha)
        self.rng = random.Random(seed)

    def __next__(self) -> dict[str, Any]:
        body = copy.deepcopy(self.params["body"])
        if self.rng.random() < self.spec.repeat_frequency:
            i = zipf_index(self.rng.random(), self.cdf)
            values = [self.standard[name][i] for name, _ in self.fields]
        else:
            values = [self.sources[name]() for name, _ in self.fields]
        set_values(body["query"], self.fields, values, self.info)
        params = {**self.params, "body": body}
        params["_body_bytes"] = search_body(params)
        return params


def unrandomizable_searches(track: Track, challenge: Challenge) -> None:
    """Without a ``workload.py`` there is no standard value source, so a search with a range query to randomize is
    an error before the race starts (OSB: "Standard value source is missing"), not a search sent unchanged."""
    code = format_at(track.root).code_file
    if (track.root / code).is_file():
        return  # its sources are checked per task when the clients are built
    for task in challenge.tasks():
        body = task.operation.params.get("body")
        if task.operation.operation_type == "search" and isinstance(body, dict) and range_fields(
                body.get("query"), DEFAULT_INFO):
            raise TrackError(f"task '{task.name}': --randomization-enabled needs a standard value source for its range "
                             f"queries, registered with register_standard_value_source in {code}, which "
                             f"{track.root} does not have")
