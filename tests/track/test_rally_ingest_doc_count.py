"""Rally's bulk ``ingest-doc-count``: exactly that many documents over all clients, its checks at load."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.driver.bulk.bodies import prepare_bodies
from bench.driver.warmup import corpus_requests
from bench.track.loader import load_track
from bench.track.model import DocumentsSpec


def _docs(tmp_path: Path, name: str, n: int) -> DocumentsSpec:
    f = tmp_path / f"{name}.json"
    f.write_text("".join(json.dumps({"n": i}) + "\n" for i in range(n)))
    return DocumentsSpec(source_file=f.name, document_count=n, target_index="i", local_path=f)


def test_each_client_indexes_its_share_from_its_slices_in_order(tmp_path):
    sets = [_docs(tmp_path, "a", 30), _docs(tmp_path, "b", 30)]
    per_client = [sum(b.docs for b in prepare_bodies(sets, client=c, clients=2, bulk_size=5, ingest_doc_count=40))
                  for c in range(2)]
    assert per_client == [20, 20]  # 40 of the 60 documents, not the whole corpus
    # client 0 owns documents 0..14 of each set: its 20 are all 15 of set a, then 5 of set b
    bodies = prepare_bodies(sets, client=0, clients=2, bulk_size=5, ingest_doc_count=40)
    assert [b.docs for b in bodies] == [5, 5, 5, 5]
    assert bodies[-1].body.count(b'{"index":{"_index":"i"}}') == 5
    assert sum(b.docs for b in prepare_bodies(sets, client=0, clients=2, bulk_size=5)) == 30


def _track(tmp_path: Path, op: dict, clients: int = 2) -> Path:
    d = tmp_path / "t"
    d.mkdir(exist_ok=True)
    (d / "track.json").write_text(json.dumps({
        "version": 2, "indices": [{"name": "i"}],
        "corpora": [{"name": "c", "documents": [{"source-file": "d.json", "document-count": 100}]}],
        "schedule": [{"operation": {"name": "bulk", "operation-type": "bulk", "bulk-size": 10, **op},
                      "clients": clients}]}))
    return d


def test_the_warmup_arithmetic_counts_the_capped_bulks(tmp_path):
    track = load_track(_track(tmp_path, {"ingest-doc-count": 40}), {})
    ch = track.challenge(None)
    assert corpus_requests(track, ch.tasks()[0]) == [2, 2]


@pytest.mark.parametrize("op, clients, message", [
    ({"ingest-doc-count": 40, "ingest-percentage": 50}, 2, "mutually exclusive"),
    ({"ingest-doc-count": 0}, 2, "use a positive integer"),
    ({"ingest-doc-count": "many"}, 2, "use a positive integer"),
    ({"ingest-doc-count": 45}, 2, "multiple of bulk-size (10)"),
    ({"ingest-doc-count": 30}, 2, "15 documents each, not a multiple of bulk-size (10)"),
    ({"ingest-doc-count": 200}, 2, "more than the 100 documents"),
])
def test_what_rally_refuses_is_refused_at_load_in_one_line(tmp_path, op, clients, message):
    track = load_track(_track(tmp_path, op, clients), {})
    with pytest.raises(Exception, match=message.replace("(", r"\(").replace(")", r"\)")) as e:
        track.challenge(None)
    assert "\n" not in str(e.value)


def test_retries_on_429_is_refused_at_load_rather_than_ignored(tmp_path):
    track = load_track(_track(tmp_path, {"retries_on_429": 3}), {})
    with pytest.raises(Exception, match="retries_on_429 3: bench's bulk does not resend"):
        track.challenge(None)


def test_response_compression_disabled_asks_for_an_uncompressed_answer():
    import asyncio

    from bench.driver.runners.core import Result
    from bench.driver.runners.request_options import with_request_options
    from bench.http.request_scope import current

    seen = {}

    async def runner(ctx, params):
        seen.update(current().headers)
        return Result()

    wrapped = with_request_options(runner, "q", "search", {"response-compression-enabled": False})
    asyncio.run(wrapped(None, {}))
    assert seen == {"Accept-Encoding": "identity"}
    assert with_request_options(runner, "q", "search", {"response-compression-enabled": True}) is runner
