"""A replay server for recorded cluster answers (``../shared/fixtures``-style files), on 127.0.0.1.

    with FixtureServer() as srv:
        srv.add("GET", "/_ccr/stats", fixture("elasticsearch-ccr", "index_ccr_stats.json"))
        srv.add_sequence("GET", "/_plugins/_replication/follower-01/_status",
                         [fixture("opensearch-replication", "status_lagging.json"),
                          fixture("opensearch-replication", "status_caught_up.json")])
        ... srv.host ("127.0.0.1:port") as --target-hosts, srv.requests for what was asked

Bodies are served byte for byte (recordings pretty-print where the real server did). A sequence answers
its items in order, then repeats the last one. Unknown paths answer 404 like a cluster would. The server
runs its own event loop in a thread, so sync and async tests can use it alike.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
from pathlib import Path
from typing import Any, Self

from aiohttp import web

from tests.support.shared_tree import shared_path

FIXTURES = Path(os.environ.get("BENCH_FIXTURES") or shared_path("fixtures"))


def fixture(folder: str, name: str) -> bytes:
    return (FIXTURES / folder / name).read_bytes()


def fixture_json(folder: str, name: str) -> Any:
    return json.loads(fixture(folder, name))


def fixture_status(folder: str, name: str) -> int:
    """The HTTP status a recording was answered with: from the folder's index.json, else from the body."""
    index = fixture_json(folder, "index.json")
    meta = index.get(name)
    if isinstance(meta, dict) and "http_status" in meta:
        return int(meta["http_status"])
    body = fixture_json(folder, name)
    return int(body.get("status", 200)) if isinstance(body, dict) and "error" in body else 200


Answer = tuple[int, bytes]


class FixtureServer:
    def __init__(self) -> None:
        self._routes: dict[tuple[str, str], list[Answer]] = {}
        self._served: dict[tuple[str, str], int] = {}
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self.port = 0
        self._lock = threading.Lock()

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self.port}"

    def add(self, method: str, path: str, body: bytes | str | dict[str, Any], status: int = 200) -> None:
        self.add_sequence(method, path, [body], [status])

    def add_sequence(self, method: str, path: str, bodies: list[bytes | str | dict[str, Any]],
                     statuses: list[int] | None = None) -> None:
        answers = []
        for i, b in enumerate(bodies):
            raw = b if isinstance(b, bytes) else b.encode() if isinstance(b, str) else json.dumps(b).encode()
            answers.append(((statuses or [200] * len(bodies))[i], raw))
        with self._lock:
            self._routes[(method.upper(), path)] = answers
            self._served[(method.upper(), path)] = 0

    def served(self, method: str, path: str) -> int:
        return self._served.get((method.upper(), path), 0)

    async def _handle(self, request: web.Request) -> web.Response:
        key = (request.method, request.path)
        with self._lock:
            self.requests.append((request.method, request.path, dict(request.query)))
            answers = self._routes.get(key)
            if answers is None:
                return web.Response(status=404, content_type="application/json",
                                    body=json.dumps({"error": f"no fixture for {request.method} {request.path}",
                                                     "status": 404}).encode())
            n = self._served[key]
            self._served[key] = n + 1
        status, body = answers[min(n, len(answers) - 1)]
        return web.Response(status=status, body=body, content_type="application/json")

    def __enter__(self) -> Self:
        ready = threading.Event()
        errors: list[BaseException] = []

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            try:
                app = web.Application()
                app.router.add_route("*", "/{tail:.*}", self._handle)
                self._runner = web.AppRunner(app, access_log=None)
                loop.run_until_complete(self._runner.setup())
                site = web.TCPSite(self._runner, "127.0.0.1", 0)
                loop.run_until_complete(site.start())
                self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
            except BaseException as e:  # noqa: BLE001
                errors.append(e)
                ready.set()
                return
            ready.set()
            loop.run_forever()
            loop.run_until_complete(self._runner.cleanup())
            loop.close()

        self._thread = threading.Thread(target=run, name="fixture-server", daemon=True)
        self._thread.start()
        if not ready.wait(10) or errors:
            raise RuntimeError(f"fixture server did not start: {errors}")
        return self

    def __exit__(self, *exc: object) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(10)
