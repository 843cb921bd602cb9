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
