"""Shard-aware bulk bodies (the INFINI gateway's ``bulk_reshuffle``): each document gets a client-side id, its shard
is computed as the engine routes it (``bench.driver.shard_routing``), and a client's documents are grouped by the node
holding their shard's primary, then cut into bulks of ``bulk-size`` documents, each sent straight to that node: no
node forwards a document to another. Built before the clock starts, like every bulk body.
"""

from __future__ import annotations

import gzip
import json
import mmap
from itertools import zip_longest
from pathlib import Path

from bench.driver.bodies import BulkBody, client_slice, newline_offsets
from bench.driver.shard_routing import ShardTable
from bench.errors import TrackError
from bench.track.model import DocumentsSpec


def routed_id(prefix: str, doc_set: int, number: int) -> str:
    """The client-side id of a corpus document: unique per task run (prefix), document set and position."""
    return f"{prefix}{doc_set}-{number:010d}"


def prepare_routed_bodies(documents: list[DocumentsSpec], *, client: int, clients: int, bulk_size: int,
                          table: ShardTable, where: str, ingest_percentage: float = 100.0,
                          gzip_bodies: bool = False, default_index: str | None = None) -> list[tuple[BulkBody, str]]:
    """One client's bodies with the node URL each goes to, alternating between nodes in sending order."""
    if bulk_size < 1:
        raise TrackError(f"{where}: bulk-size must be at least 1, got {bulk_size}")
    index = table.routing.index
    per_node: dict[str, list[bytes]] = {}
    for set_no, doc in enumerate(documents):
        target = doc.target_index or default_index
        if doc.target_data_stream or target != index:
            raise TrackError(f"{where}: shard-aware bulk needs every document set to go to index {index}; "
                             f"{doc.source_file} goes to {doc.target_data_stream or target}")
        if doc.includes_action_and_meta_data:
            raise TrackError(f"{where}: shard-aware bulk gives documents their ids; {doc.source_file} includes "
                             f"action-and-meta-data lines of its own")
        if doc.local_path is None:
            raise TrackError(f"{where}: corpus file {doc.source_file} was not prepared")
        path = Path(doc.local_path)
        if path.stat().st_size == 0:
            continue
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            nl = newline_offsets(path, mm)
            total = min(doc.document_count, len(nl))
            start, end = client_slice(total, client, clients)
            end = start + int((end - start) * ingest_percentage / 100.0)
            # only this client's documents are read out of the file
            lo = 0 if start == 0 else int(nl[start - 1]) + 1
            lines = mm[lo:int(nl[end - 1]) + 1].split(b"\n")[:-1] if end > start else []
        for k, line in zip(range(start, end), lines, strict=True):
            doc_id = routed_id(table.id_prefix, set_no, k)
            action = json.dumps({"index": {"_index": index, "_id": doc_id}}, separators=(",", ":")).encode()
            per_node.setdefault(table.url(doc_id), []).append(action + b"\n" + line + b"\n")
    batches: list[list[tuple[BulkBody, str]]] = []
    for url, docs in per_node.items():
        mine = []
        for i in range(0, len(docs), bulk_size):
            chunk = b"".join(docs[i:i + bulk_size])
            wire = gzip.compress(chunk, compresslevel=1) if gzip_bodies else chunk
            mine.append((BulkBody(wire, min(bulk_size, len(docs) - i), len(chunk), gzip_bodies), url))
        batches.append(mine)
    return [b for group in zip_longest(*batches) for b in group if b is not None]
