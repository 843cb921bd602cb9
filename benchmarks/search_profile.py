"""Where a search request's driver time goes: the real worker loop (``bench.driver.worker.run_worker``: param
source, runner chain, HTTP client, schedule, sample records, the flush of sample batches) run in this process
against the null sink, under cProfile, for the search-ceiling track's ``match_all`` task.

Prints the driver CPU microseconds per request (this process's CPU over the requests answered; the sink runs in
its own process) and cProfile's top functions by own time. Samples are pickled as the worker's queue would send
them, so their cost is counted. Numbers are printed, never judged:

    python benchmarks/search_profile.py [--clients 64] [--seconds 10] [--top 25] [--no-profile] [--uvloop]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pickle
import pstats
import queue
import threading
import time
from pathlib import Path
from typing import Any

from bench.driver.messages import EndStep, Go, Samples, Shutdown, Step, StepDone, StepPlan
from bench.driver.worker import run_worker
from bench.http.client import ClusterTarget
from bench.track.loader import load_track
from benchmarks.nullsink import free_port, start_in_background

HERE = Path(__file__).resolve().parent


class _Results:
    """The worker's result queue, pickling each message as a multiprocessing queue does."""

    def __init__(self) -> None:
        self.requests = 0
        self.messages: queue.Queue[Any] = queue.Queue()

    def put(self, msg: Any) -> None:
        pickle.dumps(msg, protocol=pickle.HIGHEST_PROTOCOL)
        if isinstance(msg, Samples):
            self.requests += len(msg.batch)
        self.messages.put(msg)


def plan(port: int, clients: int, seconds: float, target_throughput: float | None) -> StepPlan:
    params: dict[str, Any] = {"clients": clients, "time_period": seconds, "warmup": 0}
    if target_throughput is not None:
        params["target_throughput"] = target_throughput
    track = load_track(HERE / "tracks" / "search-ceiling", params)
    task = track.challenge(None).tasks()[0]
    return StepPlan(step=0, tasks=[task], clients=[(0, c) for c in range(clients)],
                    targets=[ClusterTarget(hosts=[f"127.0.0.1:{port}"])], default_cluster="default",
                    indices={"logs": None})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--clients", type=int, default=64)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--target-throughput", type=float, help="pace the task (ops/s) instead of flat out")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--no-profile", action="store_true", help="CPU per request only, without cProfile's overhead")
    ap.add_argument("--port", type=int, help="an already running sink (default: start one)")
    ap.add_argument("--uvloop", action="store_true", help="the worker's loop from uvloop (pip install uvloop)")
    a = ap.parse_args()
    if a.uvloop:
        import asyncio

        import uvloop

        asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    port = a.port or free_port()
    sinks = [] if a.port else start_in_background(port)
    commands: queue.Queue[Any] = queue.Queue()
    results = _Results()
    commands.put(Step(plan(port, a.clients, a.seconds, a.target_throughput)))

    def conduct() -> None:  # the coordinator's part: Go once Ready, EndStep once the step is done
        results.messages.get()  # Ready
        commands.put(Go(time.monotonic()))
        while not isinstance(results.messages.get(), StepDone):
            pass
        commands.put(EndStep())
        commands.put(Shutdown())  # run_worker returns at its next command

    threading.Thread(target=conduct, daemon=True).start()
    prof = None if a.no_profile else cProfile.Profile()
    cpu0, wall0 = time.process_time(), time.monotonic()
    try:
        if prof is not None:
            prof.enable()
        run_worker(0, commands, results)
    finally:
        if prof is not None:
            prof.disable()
        for s in sinks:
            s.terminate()
    cpu, wall = time.process_time() - cpu0, time.monotonic() - wall0
    n = results.requests
    print(f"requests {n:,} in {wall:.1f} s ({n / wall:,.0f}/s); driver CPU {cpu:.2f} s "
          f"({cpu / wall:.2f} cores), {cpu / max(1, n) * 1e6:.1f} µs per request"
          + (" (under cProfile)" if prof is not None else ""))
    if prof is not None:
        out = io.StringIO()
        pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(a.top)
        print(out.getvalue())


if __name__ == "__main__":
    main()
