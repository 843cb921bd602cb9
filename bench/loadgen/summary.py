"""Loadgen's closing summary ("[Loadgen Client Metrics]"), computed from a trial's samples, plus the
latency percentiles Loadgen does not print.

Definitions (Loadgen's where it has them): requests/s and transfer/s over the measured duration (first
scheduled start to last completion); "Request Traffic" is request body bytes as sent (gzipped under
``--compress``), "Total Transfer" adds response bytes; Avg/Fastest/Slowest are service times. "Number of Errors" counts requests
that got no HTTP answer (connection errors, timeouts); "Number of Invalid" counts answers bench judges
failed (HTTP >= 400, bulk item failures) — bench's stand-in for Loadgen's assertions.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from pydantic import BaseModel

from bench.results.stats import measured_duration, percentiles


class LoadgenSummary(BaseModel):
    requests: int
    duration_s: float
    bytes_sent: int
    bytes_received: int
    requests_per_s: float
    request_traffic_per_s: float
    total_transfer_per_s: float
    avg_ms: float
    fastest_ms: float
    slowest_ms: float
    errors: int
    invalid: int
    statuses: dict[int, int]
    latency_ms: dict[float, float]
    docs: int = 0


def summarize_loadgen(df: pd.DataFrame) -> LoadgenSummary | None:
    m = df[~df["warmup"].astype(bool)]
    if m.empty:
        return None
    duration = max(measured_duration(m), 1e-9)
    st = m["service_time"].to_numpy() * 1000.0
    status = m["status"].to_numpy() if "status" in m else np.zeros(len(m), dtype=int)
    received = int(m["bytes_received"].sum()) if "bytes_received" in m else 0
    sent = int(m["bytes_sent"].sum())
    ok = m["success"].astype(bool).to_numpy()
    counts = pd.Series(status).value_counts().sort_index()
    return LoadgenSummary(
        requests=len(m), duration_s=duration, bytes_sent=sent, bytes_received=received,
        requests_per_s=len(m) / duration, request_traffic_per_s=sent / duration,
        total_transfer_per_s=(sent + received) / duration, avg_ms=float(st.mean()), fastest_ms=float(st.min()),
        slowest_ms=float(st.max()), errors=int((status == 0).sum()), invalid=int(((status != 0) & ~ok).sum()),
        statuses={int(k): int(v) for k, v in zip(counts.index, counts.to_numpy())},
        latency_ms=percentiles(m["latency"].to_numpy() * 1000.0, [50.0, 90.0, 95.0, 99.0, 99.9, 100.0]),
        docs=int(m.loc[m["unit"] == "docs", "units"].sum()))


def human_bytes(n: float) -> str:
    """Loadgen's sizes: 1024-based, two decimals (``524.61KB``)."""
    for unit in ("bytes", "KB", "MB", "GB"):
        if abs(n) < 1024 or unit == "GB":
            return f"{n:.2f}{unit}"
        n /= 1024.0
    return f"{n:.2f}GB"  # pragma: no cover


def human_ms(ms: float) -> str:
    if ms < 1:
        return f"{ms * 1000:.3f}µs"
    if ms < 1000:
        return f"{ms:.3f}ms"
    return f"{ms / 1000:.3f}s"


def render_loadgen(s: LoadgenSummary) -> str:
    lines = [(f"{s.requests} requests in {s.duration_s:.3f}s, {human_bytes(s.bytes_sent)} sent, "
             f"{human_bytes(s.bytes_received)} received"), "", "[Loadgen Client Metrics]",
             f"Requests/sec:\t\t{s.requests_per_s:.2f}",
             f"Request Traffic/sec:\t{human_bytes(s.request_traffic_per_s)}",
             f"Total Transfer/sec:\t{human_bytes(s.total_transfer_per_s)}",
             f"Avg Req Time:\t\t{human_ms(s.avg_ms)}",
             f"Fastest Request:\t{human_ms(s.fastest_ms)}",
             f"Slowest Request:\t{human_ms(s.slowest_ms)}",
             f"Number of Errors:\t{s.errors}",
             f"Number of Invalid:\t{s.invalid}"]
    lines += [f"Status {code}:\t\t{n}" for code, n in s.statuses.items()]
    if s.docs:
        lines.append(f"Documents/sec:\t\t{s.docs / s.duration_s:.2f}")
    lines += ["", "[Latency percentiles] (from scheduled start; with -r, waiting behind the rate counts)"]
    lines += [f"p{p:g}:\t\t\t{human_ms(v)}" for p, v in sorted(s.latency_ms.items())]
    return "\n".join(lines) + "\n"
