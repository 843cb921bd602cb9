"""A metrics store that stops answering for a while, as a long race sees it: the race's samples go on into the local
trial (the spool), bench's memory does not grow with the backlog, and once the store answers again the pusher
catches up before the race ends -- every sample once. (tests/trials/test_metrics_store.py freezes a store for
the rest of a race and catches up with ``bench store push`` afterwards.)"""

from __future__ import annotations

import gc
import socket
import struct
import threading
import time
import tracemalloc
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from urllib.parse import urlsplit

import pytest

from bench.driver.samples import RequestSample
from bench.provision.model import ClusterInfo
from bench.trials.metrics_store import config as store_config
from bench.trials.metrics_store.http import StoreHttp, StoreUnavailable
from bench.trials.metrics_store.mirrored import MirroredStore
from bench.trials.metrics_store.pusher import BATCH, MIN_BATCH, TrialPush
from bench.trials.model import TrialInfo
from bench.trials.recording import SampleBuffer
from bench.trials.sqlite import TrialStore


class OutageProxy:
    """A TCP proxy in front of the store that can be ``down``: then it resets every connection, open or new, as a
    store whose node died behind its load balancer does. (A store that takes connections and answers nothing is
    tests/trials/test_metrics_store.py's frozen store.)"""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self.down = False
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = self._server.getsockname()[1]
        self._lock = threading.Lock()
        self._open: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            if self.down:
                _reset(client)
                continue
            upstream = socket.create_connection(self.upstream)
            with self._lock:
                self._open += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._relay, args=(a, b), daemon=True).start()

    def _relay(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                _reset(s)

    def set_down(self, down: bool) -> None:
        self.down = down
        if down:
            with self._lock:
                for s in self._open:
                    _reset(s)
                self._open.clear()

    def close(self) -> None:
        self._server.close()
        self.set_down(True)


def _reset(s: socket.socket) -> None:
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # RST, not a polite FIN
        s.close()
    except OSError:
        pass


@pytest.fixture
def proxy(es_cluster: ClusterInfo) -> Iterator[OutageProxy]:
    url = urlsplit(es_cluster.hosts[0])
    p = OutageProxy((url.hostname or "127.0.0.1", url.port or 9200))
    try:
        yield p
    finally:
        p.close()


def _samples(start: int, n: int) -> list[RequestSample]:
    now = time.time()
    return [RequestSample("index-append", "bulk", "bulk", i % 4, now, float(i), 0.01, 0.01, 100, "docs", 4096,
                          True, None, False) for i in range(start, start + n)]


def _write(sink: SampleBuffer, start: int, n: int, batch: int = 500) -> None:
    for i in range(start, start + n, batch):
        sink(_samples(i, min(batch, start + n - i)))
    sink.flush()


def _until(condition: Callable[[], bool], failure: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"{failure} (within {timeout:.0f} s)"
        time.sleep(0.1)


def _peak_over(seconds: float) -> int:
    """The most memory Python held (tracemalloc) from now until ``seconds`` later, the last writes included."""
    gc.collect()
    tracemalloc.reset_peak()
    time.sleep(seconds)
    return tracemalloc.get_traced_memory()[1]


@pytest.mark.usefixtures("bench_home")
def test_a_store_outage_mid_race_loses_no_sample_and_holds_no_backlog_in_memory(proxy: OutageProxy) -> None:
    store_config.reset()
    config = store_config.from_url(f"http://127.0.0.1:{proxy.port}", prefix="outage")
    trial_id = "0" * 24 + "0ea7a9e1"
    store = MirroredStore(config)
    sink = SampleBuffer(store, trial_id)
    tracemalloc.start()
    try:
        store.create_trial(TrialInfo(id=trial_id, track="t", challenge="c", start_time=datetime.now(UTC)))
        _write(sink, 0, 1000)  # the store takes these
        proxy.set_down(True)  # the outage: every request from here is refused
        _write(sink, 1000, 2000)
        _until(lambda: store.pusher.pending == {trial_id}, "the pusher did not notice the outage")
        before = _peak_over(2.5)  # more attempts (one a second) with the backlog so far
        _write(sink, 3000, 10_000)  # 10,000 more while the store is down
        after = _peak_over(2.5)  # and with the whole backlog there
        tracemalloc.stop()  # it slows the catch-up below several times over
        assert store.pusher.pending == {trial_id}
        with TrialStore(store.local.path) as local:
            assert len(local.samples(trial_id)) == 13_000  # the spool has them all
        proxy.set_down(False)  # the store is back while the race still runs
        _until(lambda: not store.pusher.pending, "the pusher did not resume after the store answered again", 90)
        store.finish_trial(trial_id, "complete")
    finally:
        tracemalloc.stop()
        store.close()
    # Holding the last 10,000 samples (tuples of 15 fields with their values) would take ~2.3 MiB more; the backlog
    # stays in SQLite and the pusher re-reads at most one batch of it per attempt.
    grown = after - before
    print(f"peak traced memory: {before / 2**20:.1f} MiB, then {after / 2**20:.1f} MiB")
    assert grown < 2**20, f"memory grew by {grown / 2**20:.1f} MiB while the store was down"
    assert store.push_refused is None
    http = StoreHttp(config)
    try:
        http.request("POST", "/outage-metrics-*/_refresh")
        _, body = http.request("POST", "/outage-metrics-*/_count", {"query": {"bool": {"filter": [
            {"term": {"race-id": trial_id}}, {"term": {"name": "latency"}}]}}})
        assert body["count"] == 13_000  # each sample once: batches re-sent after the outage overwrite
    finally:
        _, indices = http.request("GET", "/_cat/indices/outage-*?format=json&h=index")
        for i in indices or []:  # by name: Elasticsearch 8 refuses wildcard deletes
            http.request("DELETE", f"/{i['index']}", ok=(404,))
        http.close()


@pytest.mark.usefixtures("bench_home")
def test_a_store_that_cannot_take_a_batch_gets_smaller_ones() -> None:
    with socket.create_server(("127.0.0.1", 0)) as s:
        port = s.getsockname()[1]  # closed below: nothing listens there
    config = store_config.from_url(f"http://127.0.0.1:{port}", prefix="outage")
    trial_id = "0" * 24 + "5a11e57e"
    with TrialStore() as local:
        local.create_trial(TrialInfo(id=trial_id, track="t", challenge="c", start_time=datetime.now(UTC)))
        local.add_samples(trial_id, _samples(0, 10))
        push = TrialPush(local, config)
        push._templates = True  # straight to the samples' bulk requests
        sizes = []
        for _ in range(8):
            with pytest.raises(StoreUnavailable):
                push.push(trial_id)
            sizes.append(push.batch)
        push.http.close()
    assert sizes == [BATCH // 2, BATCH // 4, BATCH // 8, BATCH // 16, BATCH // 32, MIN_BATCH, MIN_BATCH, MIN_BATCH]
