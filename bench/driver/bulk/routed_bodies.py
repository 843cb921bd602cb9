"""Shard-aware bulk bodies (the INFINI gateway's ``bulk_reshuffle``): each document gets a client-side id, its shard
is computed as the engine routes it (``bench.driver.bulk.shard_routing``), and a client's documents are grouped by the node
holding their shard's primary, then cut into bulks of ``bulk-size`` documents, each sent straight to that node: no
node forwards a document to another. Built before the clock starts, like every bulk body. Each body remembers how
many of its documents belong to each shard, so that when primaries move during the task
(``bench.driver.bulk.routing_watch`` re-reads the table) it goes to the node that now holds most of them.
"""

from __future__ import annotations

import gzip
import json
import mmap
from collections import Counter
from dataclasses import dataclass
from itertools import zip_longest
from pathlib import Path

from bench.driver.bulk.bodies import BulkBody, client_slice, newline_offsets
from bench.driver.bulk.shard_routing import ShardTable
from bench.track.model import DocumentsSpec
from bench.util.errors import TrackError


def routed_id(prefix: str, doc_set: int, number: int) -> str:
    """The client-side id of a corpus document: unique per task run (prefix), document set and position."""
    return f"{prefix}{doc_set}-{number:010d}"


@dataclass(frozen=True)
class RoutedBody:
    body: BulkBody
    url: str  # the node holding most of its documents' primaries when the task started
    shards: tuple[tuple[int, int], ...]  # (shard, documents) pairs, most documents first


def node_for(shards: tuple[tuple[int, int], ...], primary_urls: dict[int, str]) -> str:
    """The node holding the primaries of most of a body's documents."""
    per_node: Counter[str] = Counter()
    for shard, docs in shards:
        per_node[primary_urls[shard]] += docs
    return per_node.most_common(1)[0][0]


def prepare_routed_bodies(documents: list[DocumentsSpec], *, client: int, clients: int, bulk_size: int,
                          table: ShardTable, where: str, ingest_percentage: float = 100.0,
                          gzip_bodies: bool = False, default_index: str | None = None) -> list[RoutedBody]:
    """One client's bodies with the node each goes to, alternating between nodes in sending order."""
    if bulk_size < 1:
        raise TrackError(f"{where}: bulk-size must be at least 1, got {bulk_size}")
    index = table.routing.index
    per_node: dict[str, list[tuple[int, bytes]]] = {}
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
            shard = table.routing.shard(doc_id)
            action = json.dumps({"index": {"_index": index, "_id": doc_id}}, separators=(",", ":")).encode()
            per_node.setdefault(table.primary_urls[shard], []).append((shard, action + b"\n" + line + b"\n"))
    batches: list[list[RoutedBody]] = []
    for url, docs in per_node.items():
        mine = []
        for i in range(0, len(docs), bulk_size):
            part = docs[i:i + bulk_size]
            chunk = b"".join(d for _, d in part)
            wire = gzip.compress(chunk, compresslevel=1) if gzip_bodies else chunk
            shards = tuple(Counter(shard for shard, _ in part).most_common())
            mine.append(RoutedBody(BulkBody(wire, len(part), len(chunk), gzip_bodies), url, shards))
        batches.append(mine)
    return [b for group in zip_longest(*batches) for b in group if b is not None]
