"""The telemetry device contract and what devices share: the race context, cluster requests, flattening.

A device takes one sample of one *scope* (a cluster of the race, or the host) when asked and returns
rows; the runner decides when (``runner.py``). A device raises on a failed sample (timeout, HTTP error,
node gone); partial problems inside a good answer (e.g. a CCR fatal_exception) go to ``Sampled.errors``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar

import psutil

from bench.driver.samples import TelemetryRow
from bench.http.client import ClusterTarget, RawHttp
from bench.util import redact
from bench.util.errors import BenchError, ConfigError

HOST_SCOPE = "host"


class TelemetryError(BenchError):
    """One sample could not be taken (recorded with the trial; never ends the race)."""


@dataclass
class TelemetryContext:
    """What devices may look at: the race's clusters and the processes bench runs."""

    targets: dict[str, ClusterTarget]
    # name -> check_cluster() facts: engine ("elasticsearch"/"opensearch"), version, ...
    clusters: dict[str, dict[str, Any]] = field(default_factory=dict)
    # (cluster, node) -> the node's processes, for nodes bench started (empty for benchmark-only races)
    node_processes: Callable[[], dict[tuple[str, str], list[psutil.Process]]] | None = None
    # the bench processes: the race's own process first, then the load-driver workers
    driver_pids: Callable[[], list[int]] | None = None

    def engine(self, cluster: str) -> str:
        return str(self.clusters.get(cluster, {}).get("engine") or "elasticsearch")

    def version(self, cluster: str) -> tuple[int, ...]:
        raw = str(self.clusters.get(cluster, {}).get("version") or "")
        parts = []
        for p in raw.split(",")[0].split("-")[0].split("."):
            if not p.isdigit():
                break
            parts.append(int(p))
        return tuple(parts)


@dataclass
class Sampled:
    rows: list[TelemetryRow] = field(default_factory=list)
    raw: dict[str, Any] | None = None  # the document kept with the sample, if the device keeps one
    errors: list[str] = field(default_factory=list)  # problems inside a good answer


class Device:
    name: ClassVar[str]
    end_only: ClassVar[bool] = False  # sampled once, at the end
    bounds_only: ClassVar[bool] = False  # sampled at the start and at the end only (the summary reports the change)

    def __init__(self, params: dict[str, Any], ctx: TelemetryContext) -> None:
        self.params = params
        self.ctx = ctx

    @property
    def interval(self) -> float:
        return float(self.params.get(f"{self.name}-sample-interval") or 1.0)

    @property
    def request_timeout(self) -> float:
        # A sample that takes much longer than the interval is a failed sample, not a blocked loop.
        return max(5.0, 2.0 * self.interval)

    def scopes(self) -> list[str]:
        return cluster_scopes(self.name, self.params.get(f"{self.name}-clusters"), self.ctx)

    async def open(self) -> None: ...

    async def check(self) -> None:
        """After ``open``, before the schedule: raise a ConfigError naming what the cluster cannot serve."""

    async def sample(self, scope: str, ts: float) -> Sampled:
        raise NotImplementedError

    async def close(self) -> None: ...


def cluster_scopes(device: str, wanted: list[str] | None, ctx: TelemetryContext) -> list[str]:
    if not wanted:
        return list(ctx.targets)
    unknown = [c for c in wanted if c not in ctx.targets]
    if unknown:
        raise ConfigError(f"--telemetry-params: {device}-clusters names unknown cluster(s) {', '.join(unknown)}; "
                          f"the race's clusters are {', '.join(ctx.targets)}")
    return list(wanted)


class ClusterDevice(Device):
    """A device that talks to clusters over RawHttp (engine-neutral JSON)."""

    def __init__(self, params: dict[str, Any], ctx: TelemetryContext) -> None:
        super().__init__(params, ctx)
        self._http: dict[str, RawHttp] = {}

    async def open(self) -> None:
        for c in self.scopes():
            http = RawHttp(self.ctx.targets[c], connections=2)
            await http.__aenter__()
            self._http[c] = http

    async def close(self) -> None:
        for http in self._http.values():
            await http.__aexit__(None, None, None)
        self._http.clear()

    async def get(self, cluster: str, path: str, params: dict[str, Any] | None = None,
                  ok: tuple[int, ...] = ()) -> tuple[int, Any]:
        """GET returning (status, body); HTTP errors other than ``ok`` raise TelemetryError."""
        status, body = await self._http[cluster].request("GET", path, params=params, timeout=self.request_timeout)
        if status >= 400 and status not in ok:
            raise TelemetryError(f"GET {path} on {cluster} answered HTTP {status}: {snippet(body)}")
        return status, body


def snippet(body: Any, limit: int = 200) -> str:
    text = body if isinstance(body, str) else json.dumps(body, default=str)
    return redact.redact_text(" ".join(str(text).split())[:limit])


def flatten(doc: Any, prefix: str = "") -> Iterator[tuple[str, float]]:
    """Numeric leaves of a JSON document as (dotted.path, value); booleans and strings are skipped,
    list items are keyed by index."""
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from flatten(v, f"{prefix}.{k}" if prefix else str(k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from flatten(v, f"{prefix}.{i}" if prefix else str(i))
    elif isinstance(doc, (int, float)) and not isinstance(doc, bool):
        yield prefix, float(doc)


def rows_of(ts: float, cluster: str, node: str, device: str, values: dict[str, float] | Iterator[tuple[str, float]]
            ) -> list[TelemetryRow]:
    items = values.items() if isinstance(values, dict) else values
    return [TelemetryRow(ts, cluster, node, device, m, float(v)) for m, v in items]
