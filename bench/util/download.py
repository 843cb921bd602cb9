"""Downloading one URL to a file with a progress bar: shared by distributions and corpora.

The caller passes a temporary path (``.part``) and renames it once it has checked what it got, so a
partial or interrupted download is never mistaken for a good one.
"""

from __future__ import annotations

import logging
import socket
import urllib.error
import urllib.request
from pathlib import Path

from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn, TransferSpeedColumn

from bench.util.errors import BenchError

log = logging.getLogger(__name__)

_CHUNK = 1 << 20
NOT_FOUND = (404, 410)  # the server answered: there is no such file


def fetch(url: str, dest: Path, *, error: type[BenchError], what: str = "", hint: str = "",
          timeout: float = 60.0, unreachable: type[BenchError] | None = None,
          not_found: type[BenchError] | None = None) -> None:
    """Stream ``url`` into ``dest``; on any failure (also Ctrl-C) remove ``dest`` and, for network
    problems, raise ``error`` with one line: ``cannot download <what><url>: <reason><hint>`` (``unreachable``
    instead when no HTTP answer came at all, e.g. the host has no DNS entry here; ``not_found`` instead when the
    server answered that nothing is there, HTTP 404 or 410)."""
    log.info("downloading %s to %s", url, dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp, open(dest, "wb") as out:
            total = int(resp.headers.get("Content-Length") or 0) or None
            with Progress(TextColumn("[bold]{task.description}"), BarColumn(), DownloadColumn(),
                          TransferSpeedColumn(), TimeRemainingColumn(), transient=True) as progress:
                task = progress.add_task(f"Downloading {Path(url).name}", total=total)
                while chunk := resp.read(_CHUNK):
                    out.write(chunk)
                    progress.update(task, advance=len(chunk))
            if total is not None and out.tell() != total:
                raise error(f"download of {url} ended after {out.tell()} of {total} bytes; try again")
    except BaseException as e:
        dest.unlink(missing_ok=True)
        if isinstance(e, urllib.error.HTTPError):
            e.close()  # it holds the answer's connection
            raise (not_found if not_found is not None and e.code in NOT_FOUND else error)(f"cannot download {what}{url}: HTTP {e.code} {e.reason}{hint}") from None
        if isinstance(e, (urllib.error.URLError, OSError)):
            no_answer = isinstance(e, (urllib.error.URLError, ConnectionError, TimeoutError, socket.gaierror))
            raise (unreachable if unreachable and no_answer else error)(f"cannot download {what}{url}: {getattr(e, 'reason', e)}{hint}") from None
        raise
