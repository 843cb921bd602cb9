"""The one workload every tool runs: generated nginx documents bulk-indexed in a loop into a 1-shard index.

The documents file is generated once (bench's seeded nginx generator) into the bench cache and linked into
each tool's track folder as ``documents.json``: bench, Rally and OSB all look for a corpus file with no
``base-url`` next to the track file first (Rally/OSB: ``data_dir()`` returns the track folder first in
``--track-path``/``--workload-path`` mode and ``prepare_bundled_document_set`` uses a file found there), so nothing
is downloaded. Rally and OSB write their ``documents.json.offset`` table beside it, which is why every tool
gets its own folder.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel

from bench.track.generators import generate_file
from bench.util.home import cache_home

INDEX = "nginx"
TASK = "index-append"
SEED = 1


class Corpus(BaseModel):
    path: Path
    documents: int
    uncompressed_bytes: int


class LoadSettings(BaseModel):
    clients: int
    bulk_size: int
    warmup_s: int
    time_period_s: int


def sidebyside_dir() -> Path:
    p = cache_home() / "sidebyside"
    p.mkdir(parents=True, exist_ok=True)
    return p


def corpus_file(documents: int) -> Corpus:
    """The nginx documents file for ``documents`` documents, generated on first use."""
    path = sidebyside_dir() / "corpus" / f"nginx-seed{SEED}-n{documents}.json"
    if not path.is_file():
        print(f"generating {documents} nginx documents into {path}", flush=True)
        generate_file("nginx", SEED, documents, path)
    return Corpus(path=path, documents=documents, uncompressed_bytes=path.stat().st_size)


def track_body(corpus: Corpus, load: LoadSettings, *, sink: bool = False) -> dict[str, object]:
    """One track in the field names bench, Rally and OSB share (version 2, top-level schedule). Into the null
    sink only the bulk task runs: the sink has no index to delete, create or wait for."""
    admin = [] if sink else [
        {"operation": {"operation-type": "delete-index"}},
        {"operation": {"operation-type": "create-index"}},
        {"operation": {"operation-type": "cluster-health", "index": INDEX,
                       "request-params": {"wait_for_status": "green"}, "retry-until-success": True}},
    ]
    return {
        "version": 2,
        "description": "side by side: generated nginx documents bulk-indexed in a loop into one shard",
        "indices": [{"name": INDEX, "body": "index.json"}],
        "corpora": [{"name": "nginx", "documents": [{
            "source-file": "documents.json",
            "document-count": corpus.documents,
            "uncompressed-bytes": corpus.uncompressed_bytes,
            "target-index": INDEX,
        }]}],
        "schedule": [
            *admin,
            {"name": TASK,
             "operation": {"operation-type": "bulk", "bulk-size": load.bulk_size, "looped": True, "corpora": "nginx"},
             "clients": load.clients, "warmup-time-period": load.warmup_s, "time-period": load.time_period_s},
        ],
    }


INDEX_BODY = {"settings": {"index": {"number_of_shards": 1, "number_of_replicas": 0}}}


def write_track(folder: Path, track_file: str, corpus: Corpus, load: LoadSettings, *, sink: bool = False) -> Path:
    """Write ``track_file`` (track.json or workload.json), index.json and the documents link into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / track_file).write_text(json.dumps(track_body(corpus, load, sink=sink), indent=2))
    (folder / "index.json").write_text(json.dumps(INDEX_BODY, indent=2))
    link = folder / "documents.json"
    if link.is_symlink() or link.exists():
        if link.resolve() != corpus.path.resolve():
            link.unlink()
            (folder / "documents.json.offset").unlink(missing_ok=True)
    if not link.exists():
        link.symlink_to(corpus.path)
    return folder
