"""The records the load driver produces. Plain NamedTuples: cheap to create on the hot path,
cheap to pickle between worker processes, and one row each in the trial store."""

from __future__ import annotations

from typing import Any, NamedTuple


class RequestSample(NamedTuple):
    task: str
    operation: str
    operation_type: str
    client_id: int
    # Wall-clock (epoch seconds) when the request was *scheduled* to start.
    absolute_time: float
    # Seconds since the task started (same clock as absolute_time) at request completion.
    relative_time: float
    # Completion minus scheduled start: includes waiting behind earlier requests (coordinated omission).
    latency: float
    # Completion minus actual start: how long the cluster took to answer.
    service_time: float
    # Work done by the request: documents for bulk, 1 for everything else.
    units: int
    unit: str  # "docs" or "ops"
    bytes_sent: int
    success: bool
    error_type: str | None
    warmup: bool
    # Items of a bulk that failed (counted in the error rate per document).
    failed_units: int = 0
    # Response body bytes (k6's data_received, Loadgen's transfer/s); 0 where a runner does not measure it.
    bytes_received: int = 0
    # HTTP status of the response (Loadgen's per-status counts); 0 when there was no response.
    status: int = 0
    # Why a failed request failed (the runner's message, e.g. "HTTP 404: index_not_found_exception: ...");
    # None for successes. Stored so a trial can show its distinct errors with counts.
    error: str | None = None
    # What a track's runner (track.py) returned besides weight, unit and success, as JSON text; None otherwise.
    meta: str | None = None


class TelemetryRow(NamedTuple):
    """One reading of a telemetry device, as stored with the trial."""

    timestamp: float  # epoch seconds
    cluster: str
    node: str
    device: str  # telemetry device name, e.g. "node-stats"
    metric: str
    value: float
    raw: dict[str, Any] | None = None


# A RequestSample's fields as a plain tuple, as the worker keeps them until they are sent: Python's collector
# stops tracking a plain tuple of numbers and strings at its first young collection, but never a NamedTuple, so
# tens of thousands of buffered samples were walked by every full collection (~8 ms each, once a second, at
# 47,000 searches/s). Messages rebuild RequestSample on arrival (bench.driver.messages.Samples).
SampleFields = tuple[Any, ...]
