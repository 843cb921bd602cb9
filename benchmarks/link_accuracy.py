"""How closely bench's emulated link (bench/cloud/link_proxy.py) adds its round trip and caps its rate: for each
configured RTT, bench's own measurement (an answer round trip through the link minus one without it) and an
independent probe (one byte echoed on one connection, timed here); for each rate, bench's throughput measurement
and a probe (bytes into a sink, timed from the first send to the last byte in). Markdown table on stdout.

    python benchmarks/link_accuracy.py [--rtts 50,100,200] [--rates 50mbit,200mbit]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.cloud.link_measure import measure_added_rtt, measure_throughput
from bench.cloud.link_process import LinkProcess
from bench.cloud.links import Link
from tests.cloud.test_link_proxy import echo, probe_rtt_ms, probe_throughput_bps


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--rtts", default="50,100,200")
    p.add_argument("--rates", default="50mbit,200mbit")
    a = p.parse_args()
    print(f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, {platform.node()}, {os.cpu_count()} CPUs, "
          f"load {os.getloadavg()[0]:.2f}")
    print("\n| RTT configured | bench: added (median through − median direct) | probe: echo round trip (median of 7) |")
    print("|---|---|---|")
    server = echo.__wrapped__()  # type: ignore[attr-defined]
    target = next(server)
    for rtt in (float(x) for x in a.rtts.split(",")):
        link = Link.model_validate({"from": "a", "to": "b", "rtt": f"{rtt:g}ms"})
        with LinkProcess(link, target) as proxy:
            m = measure_added_rtt(target, proxy.address)
            probe = probe_rtt_ms(proxy.port)
        print(f"| {rtt:g} ms | {m.added_rtt_ms:.1f} ms ({100 * (m.added_rtt_ms or 0) / rtt - 100:+.1f} %) | "
              f"{probe:.1f} ms ({100 * probe / rtt - 100:+.1f} %) |")
    print("\n| Rate configured | bench measured | probe |")
    print("|---|---|---|")
    for rate in a.rates.split(","):
        link = Link.model_validate({"from": "a", "to": "b", "rate": rate})
        bench_bps = measure_throughput(link).throughput_bps or 0.0
        probe_bps = probe_throughput_bps(link, (link.rate_bps or 0) // 8)
        ref = link.rate_bps or 1
        print(f"| {rate} | {bench_bps / 1e6:.1f} Mbit/s ({100 * bench_bps / ref - 100:+.1f} %) | "
              f"{probe_bps / 1e6:.1f} Mbit/s ({100 * probe_bps / ref - 100:+.1f} %) |")
    print(f"\nload after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
