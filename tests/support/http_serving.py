"""A plain HTTP server on a free port of 127.0.0.1 in a thread, for the block of a ``with`` (tests' corpus sources,
distribution repositories, fake APIs)."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@contextlib.contextmanager
def serving(handler: Callable[..., BaseHTTPRequestHandler], *,
            server_class: type[ThreadingHTTPServer] = ThreadingHTTPServer,
            wrap: Callable[[socket.socket], Any] | None = None) -> Iterator[ThreadingHTTPServer]:
    """Serve ``handler`` until the block ends (then shut down, close, join); ``wrap`` replaces the listening
    socket before serving (e.g. TLS)."""
    server = server_class(("127.0.0.1", 0), handler)
    if wrap is not None:
        server.socket = wrap(server.socket)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def files_handler(files: dict[str, bytes], requests: list[str] | None = None,
                  lock: threading.Lock | None = None) -> type[BaseHTTPRequestHandler]:
    """A handler answering GET ``path`` with ``files[path]`` (404 when absent), the dict read at request time so a
    test can change it while serving; each path asked for is appended to ``requests`` (under ``lock``)."""
    guard = lock or threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if requests is not None:
                with guard:
                    requests.append(self.path)
            body = files.get(self.path)
            self.send_response(200 if body is not None else 404)
            self.send_header("Content-Length", str(len(body or b"")))
            self.end_headers()
            self.wfile.write(body or b"")

        def log_message(self, *args: object) -> None:
            pass

    return Handler
