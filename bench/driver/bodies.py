"""Bulk request bodies, prepared as bytes before the clock starts.

Each bulk client gets its own contiguous slice of every document set (Rally's split), reads it from
the prepared corpus file through mmap, and turns it into ready-to-send ``_bulk`` bodies: the action
line is spliced in with one ``bytes.replace`` per body (C speed, no per-document Python), and bodies
are gzipped ahead when the client compresses requests. Nothing here runs while requests are measured.
"""

from __future__ import annotations

import gzip
import json
import mmap
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bench.errors import TrackError
from bench.track.model import DocumentsSpec


@dataclass(frozen=True, slots=True)
class BulkBody:
    body: bytes  # what goes on the wire (gzipped when ``gzipped``)
    docs: int
    size: int  # uncompressed bytes, what throughput in MB/s is computed from
    gzipped: bool


_NEWLINES: dict[Path, np.ndarray] = {}


def _newlines(path: Path, mm: mmap.mmap) -> np.ndarray:
    """Offsets of every newline in the file, computed once per process (numpy scans ~1 GB/s)."""
    if path not in _NEWLINES:
        arr = np.frombuffer(mm, dtype=np.uint8)
        _NEWLINES[path] = np.flatnonzero(arr == 0x0A)
        del arr  # the mmap cannot close while a buffer export exists
    return _NEWLINES[path]


def client_slice(total: int, client: int, clients: int) -> tuple[int, int]:
    """[start, end) of the documents a client owns: contiguous, sizes differ by at most one."""
    per, extra = divmod(total, clients)
    start = client * per + min(client, extra)
    return start, start + per + (1 if client < extra else 0)


def action_line(index: str | None, data_stream: str | None = None) -> bytes:
    if data_stream:
        return json.dumps({"create": {"_index": data_stream}}, separators=(",", ":")).encode() + b"\n"
    meta = {"_index": index} if index else {}
    return json.dumps({"index": meta}, separators=(",", ":")).encode() + b"\n"


def prepare_bodies(documents: list[DocumentsSpec], *, client: int, clients: int, bulk_size: int,
                   ingest_percentage: float = 100.0, gzip_bodies: bool = False,
                   default_index: str | None = None) -> list[BulkBody]:
    """All bulk bodies of one client, in sending order."""
    if bulk_size < 1:
        raise TrackError(f"bulk-size must be at least 1, got {bulk_size}")
    bodies: list[BulkBody] = []
    for doc in documents:
        if doc.local_path is None:
            raise TrackError(f"corpus file {doc.source_file} was not prepared")
        path = Path(doc.local_path)
        lines_per_doc = 2 if doc.includes_action_and_meta_data else 1
        with open(path, "rb") as f:
            if path.stat().st_size == 0:
                continue
            with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
                nl = _newlines(path, mm)
                available = len(nl) // lines_per_doc
                total = min(doc.document_count, available)
                start, end = client_slice(total, client, clients)
                end = start + int((end - start) * ingest_percentage / 100.0)
                action = b"" if doc.includes_action_and_meta_data else action_line(
                    doc.target_index or default_index, doc.target_data_stream)
                for b_start in range(start, end, bulk_size):
                    b_end = min(b_start + bulk_size, end)
                    first_line = b_start * lines_per_doc
                    last_line = b_end * lines_per_doc - 1
                    lo = 0 if first_line == 0 else int(nl[first_line - 1]) + 1
                    hi = int(nl[last_line]) + 1
                    chunk = mm[lo:hi]
                    if action:
                        # "d1\nd2\n" -> "A\nd1\nA\nd2\n" in C, one pass.
                        chunk = action + chunk.replace(b"\n", b"\n" + action)[: -len(action)]
                    size = len(chunk)
                    wire = gzip.compress(chunk, compresslevel=1) if gzip_bodies else chunk
                    bodies.append(BulkBody(wire, b_end - b_start, size, gzip_bodies))
    return bodies
