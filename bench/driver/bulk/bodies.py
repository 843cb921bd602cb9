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

from bench.track.model import DocumentsSpec
from bench.util.errors import TrackError


@dataclass(frozen=True, slots=True)
class BulkBody:
    body: bytes  # what goes on the wire (gzipped when ``gzipped``)
    docs: int
    size: int  # uncompressed bytes, what throughput in MB/s is computed from
    gzipped: bool


_NEWLINES: dict[Path, np.ndarray] = {}


def newline_offsets(path: Path, mm: mmap.mmap) -> np.ndarray:
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


def client_budget(ingest_doc_count: int | None, clients: int) -> int | None:
    """Documents each client indexes under Rally's ``ingest-doc-count`` (the total over all clients), None: all."""
    return None if ingest_doc_count is None else ingest_doc_count // clients


def action_line(index: str | None, data_stream: str | None = None) -> bytes:
    if data_stream:
        return json.dumps({"create": {"_index": data_stream}}, separators=(",", ":")).encode() + b"\n"
    meta = {"_index": index} if index else {}
    return json.dumps({"index": meta}, separators=(",", ":")).encode() + b"\n"


@dataclass(frozen=True, slots=True)
class IdConflicts:
    """Rally's client-side ids: ``conflicts`` (sequential|random), ``conflict-probability`` (0..100),
    ``on-conflict`` (index|update), ``recency`` (0..1: 0 picks any earlier id, 1 the most recent one)."""

    conflicts: str = "sequential"
    probability: float = 25.0
    on_conflict: str = "index"
    recency: float = 0.0
    seed: int = 0


def _conflict_chunk(lines: list[bytes], ids: list[str], state: dict[str, int], ic: IdConflicts, rnd: np.random.Generator,
                    index: str | None, data_stream: str | None) -> bytes:
    """Action + document lines for documents with client-side ids; some reuse an earlier id (a conflict)."""
    target = {"_index": data_stream or index} if (data_stream or index) else {}
    out: list[bytes] = []
    draws = rnd.random((len(lines), 2))
    for line, (p, u) in zip(lines, draws):
        up_to = state["up_to"]
        if up_to > 0 and p * 100.0 < ic.probability:
            if ic.recency >= 1.0:
                back = 0
            else:  # recency 0: uniform over earlier ids; towards 1: ever more likely a recent one
                back = min(up_to - 1, int(up_to * u ** (1.0 / (1.0 - ic.recency))))
            doc_id = ids[up_to - 1 - back]
            op = ic.on_conflict
        else:
            doc_id = ids[up_to] if up_to < len(ids) else ids[-1]
            state["up_to"] = up_to + 1
            op = "index"
        meta = json.dumps({op: {**target, "_id": doc_id}}, separators=(",", ":")).encode()
        out.append(meta + b"\n")
        out.append((b'{"doc":' + line + b"}\n") if op == "update" else line + b"\n")
    return b"".join(out)


def prepare_bodies(documents: list[DocumentsSpec], *, client: int, clients: int, bulk_size: int,
                   ingest_percentage: float = 100.0, gzip_bodies: bool = False,
                   default_index: str | None = None, bulk_size_bytes: int | None = None,
                   id_conflicts: IdConflicts | None = None, ingest_doc_count: int | None = None) -> list[BulkBody]:
    """All bulk bodies of one client, in sending order. ``bulk_size_bytes`` (Rally-style ``bulk-size-mb``) cuts
    bodies by source bytes instead of document count; ``id_conflicts`` gives documents client-side ids;
    ``ingest_doc_count`` (Rally's, the task's total) caps each client at its share, taken from its slices in order."""
    if bulk_size < 1:
        raise TrackError(f"bulk-size must be at least 1, got {bulk_size}")
    budget = client_budget(ingest_doc_count, clients)
    bodies: list[BulkBody] = []
    for doc in documents:
        if doc.local_path is None:
            raise TrackError(f"corpus file {doc.source_file} was not prepared")
        path = Path(doc.local_path)
        lines_per_doc = 2 if doc.includes_action_and_meta_data else 1
        if id_conflicts is not None and doc.includes_action_and_meta_data:
            raise TrackError(f"corpus file {doc.source_file} includes action-and-meta-data: its ids come from the "
                             f"file, so 'conflicts' cannot be used with it")
        with open(path, "rb") as f:
            if path.stat().st_size == 0:
                continue
            with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
                nl = newline_offsets(path, mm)
                available = len(nl) // lines_per_doc
                total = min(doc.document_count, available)
                start, end = client_slice(total, client, clients)
                end = start + int((end - start) * ingest_percentage / 100.0)
                if budget is not None:
                    end = start + min(end - start, budget)
                    budget -= end - start
                action = b"" if doc.includes_action_and_meta_data else action_line(
                    doc.target_index or default_index, doc.target_data_stream)
                ids: list[str] = []
                state = {"up_to": 0}
                rnd = np.random.default_rng([id_conflicts.seed, client]) if id_conflicts else None
                if id_conflicts is not None:
                    # Rally: ids are the document numbers of the client's slice, zero-padded; shuffled for "random".
                    ids = [f"{k:010d}" for k in range(start, end)]
                    if id_conflicts.conflicts == "random":
                        np.random.default_rng([id_conflicts.seed, client, 1]).shuffle(ids)
                # end offset (exclusive) of each document, for cutting by bytes
                doc_ends = nl[lines_per_doc - 1::lines_per_doc] + 1 if bulk_size_bytes else None
                b_start = start
                while b_start < end:
                    if doc_ends is not None and bulk_size_bytes:
                        lo_off = 0 if b_start == 0 else int(doc_ends[b_start - 1])
                        b_end = int(np.searchsorted(doc_ends, lo_off + bulk_size_bytes, side="right"))
                        b_end = min(max(b_end, b_start + 1), end)
                    else:
                        b_end = min(b_start + bulk_size, end)
                    first_line = b_start * lines_per_doc
                    last_line = b_end * lines_per_doc - 1
                    lo = 0 if first_line == 0 else int(nl[first_line - 1]) + 1
                    hi = int(nl[last_line]) + 1
                    chunk = mm[lo:hi]
                    if id_conflicts is not None:
                        assert rnd is not None
                        chunk = _conflict_chunk(chunk.split(b"\n")[:-1], ids, state, id_conflicts, rnd,
                                                doc.target_index or default_index, doc.target_data_stream)
                    elif action:
                        # "d1\nd2\n" -> "A\nd1\nA\nd2\n" in C, one pass.
                        chunk = action + chunk.replace(b"\n", b"\n" + action)[: -len(action)]
                    size = len(chunk)
                    wire = gzip.compress(chunk, compresslevel=1) if gzip_bodies else chunk
                    bodies.append(BulkBody(wire, b_end - b_start, size, gzip_bodies))
                    b_start = b_end
    return bodies
