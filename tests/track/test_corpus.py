"""Preparing corpora: generation, local files, compression, downloads, line checks, test mode."""

from __future__ import annotations

import bz2
import contextlib
import functools
import gzip
import http.server
import json
from pathlib import Path

import pytest
import zstandard

from bench.track.corpus import bulk_documents, prepare_corpora
from bench.track.loader import find_track, load_track
from bench.util.errors import TrackError
from bench.util.home import data_dir
from tests.support.http_serving import serving

DATA = Path(__file__).parents[1] / "data"


@pytest.fixture(autouse=True)
def _homes(tmp_path, monkeypatch):
    monkeypatch.setenv("BENCH_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("BENCH_CACHE", str(tmp_path / "cache"))  # corpora here are tiny: keep them per test


def docs_bytes(n: int, action: bool = False) -> bytes:
    out = []
    for i in range(n):
        if action:
            out.append(json.dumps({"index": {"_index": "docs", "_id": str(i)}}))
        out.append(json.dumps({"n": i, "text": f"document {i}"}))
    return ("\n".join(out) + "\n").encode()


def file_track(
    folder: Path,
    source_file: str,
    count: int,
    *,
    base_url: str | None = None,
    action: bool = False,
    corpora: list[dict] | None = None,
) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    corpus = {
        "name": "docs",
        "documents": [
            {"source-file": source_file, "document-count": count, "includes-action-and-meta-data": action}
        ],
    }
    if base_url:
        corpus["base-url"] = base_url
    track = {
        "indices": [{"name": "docs"}],
        "corpora": corpora or [corpus],
        "schedule": [{"operation": {"operation-type": "bulk", "bulk-size": 100}}],
    }
    (folder / "track.json").write_text(json.dumps(track))
    return folder


def prepared(folder: Path, *, test_mode: bool = False):
    t = load_track(folder, {}, test_mode=test_mode)
    ch = t.challenge(None)
    prepare_corpora(t, ch, test_mode=test_mode)
    return t


# ---------------------------------------------------------------- generated corpora


def test_generated_corpus_is_created_once_and_reused():
    t = load_track(find_track("nginx", None), {"doc_count": 3000, "seed": 5})
    prepare_corpora(t, t.challenge(None), test_mode=False)
    d = t.corpora[0].documents[0]
    assert d.local_path.is_file() and d.local_path.is_relative_to(data_dir() / "nginx")
    assert d.local_path.read_bytes().count(b"\n") == 3000
    assert "seed5" in d.local_path.name and "3000" in d.local_path.name
    mtime = d.local_path.stat().st_mtime_ns
    t2 = load_track(find_track("nginx", None), {"doc_count": 3000, "seed": 5})
    prepare_corpora(t2, t2.challenge("index-only"), test_mode=False)
    assert t2.corpora[0].documents[0].local_path == d.local_path
    assert d.local_path.stat().st_mtime_ns == mtime  # not generated again


def test_interrupted_generation_is_never_used():
    t = load_track(find_track("http_logs", None), {"doc_count": 2000})
    expected = data_dir() / "http_logs" / "http_logs-seed1-n2000.json"
    expected.parent.mkdir(parents=True, exist_ok=True)
    expected.with_name(expected.name + ".part").write_bytes(b'{"half": "a doc')  # left by a killed run
    prepare_corpora(t, t.challenge(None), test_mode=False)
    assert t.corpora[0].documents[0].local_path == expected
    lines = expected.read_text().splitlines()
    assert len(lines) == 2000 and all(json.loads(x) for x in lines)


def test_generated_corpus_in_test_mode_has_1000_docs():
    t = load_track(find_track("nginx", None), {}, test_mode=True)
    prepare_corpora(t, t.challenge(None), test_mode=True)
    d = t.corpora[0].documents[0]
    assert d.document_count == 1000 and d.local_path.read_bytes().count(b"\n") == 1000


# ---------------------------------------------------------------- files


@pytest.mark.parametrize(
    "ext,compress",
    [
        ("", lambda b: b),
        (".bz2", bz2.compress),
        (".gz", gzip.compress),
        (".zst", lambda b: zstandard.ZstdCompressor().compress(b)),
    ],
)
def test_local_file_next_to_track_is_decompressed_once(tmp_path, ext, compress):
    folder = file_track(tmp_path / "t", f"documents.json{ext}", 50)
    (folder / f"documents.json{ext}").write_bytes(compress(docs_bytes(50)))
    t = prepared(folder)
    d = t.corpora[0].documents[0]
    assert d.local_path.read_bytes() == docs_bytes(50)
    if ext:
        assert d.local_path == data_dir() / "docs" / "documents.json"
        mtime = d.local_path.stat().st_mtime_ns
        assert prepared(folder).corpora[0].documents[0].local_path.stat().st_mtime_ns == mtime
    else:
        assert d.local_path == folder / "documents.json"


def test_line_count_mismatch_is_an_error(tmp_path):
    folder = file_track(tmp_path / "t", "documents.json.bz2", 60)
    (folder / "documents.json.bz2").write_bytes(bz2.compress(docs_bytes(50)))
    with pytest.raises(TrackError, match=r"has 50 lines but document-count 60 needs 60"):
        prepared(folder)


def test_action_and_meta_data_counts_two_lines_per_doc(tmp_path):
    folder = file_track(tmp_path / "t", "documents.json", 20, action=True)
    (folder / "documents.json").write_bytes(docs_bytes(20, action=True))
    assert prepared(folder).corpora[0].documents[0].local_path.read_bytes().count(b"\n") == 40
    folder2 = file_track(tmp_path / "t2", "documents.json", 40, action=True)
    (folder2 / "documents.json").write_bytes(docs_bytes(20, action=True))
    with pytest.raises(TrackError, match=r"x2: includes-action-and-meta-data"):
        prepared(folder2)


def test_missing_corpus_names_file_and_places():
    with pytest.raises(TrackError) as e:
        prepared(DATA / "missing_corpus")
    msg = str(e.value)
    assert "documents.json.bz2 is not available (it has no base-url)" in msg and str(data_dir() / "missing") in msg
    assert str(DATA / "missing_corpus") in msg and "--corpus-dir" in msg and "\n" not in msg


def test_offline_never_downloads_and_says_where_it_looked(tmp_path):
    folder = file_track(tmp_path / "t", "documents.json.bz2", 3, base_url="http://127.0.0.1:9/never")
    t = load_track(folder, {})
    with pytest.raises(TrackError) as e:
        prepare_corpora(t, t.challenge(None), test_mode=False, offline=True, corpus_dir=tmp_path / "mine")
    msg = str(e.value)
    assert "(--offline: no download)" in msg and str(tmp_path / "mine" / "docs" / "documents.json.bz2") in msg
    assert str(data_dir() / "docs" / "documents.json") in msg and "--corpus-dir=DIR holding docs/" in msg


def test_a_failed_download_says_where_to_put_a_local_copy(tmp_path):
    (tmp_path / "remote" / "corpora").mkdir(parents=True)
    with serve(tmp_path / "remote") as url:
        folder = file_track(tmp_path / "t", "documents.json.bz2", 3, base_url=url)
        t = load_track(folder, {})
        with pytest.raises(TrackError) as e:
            prepare_corpora(t, t.challenge(None), test_mode=False)
    msg = str(e.value)
    assert "HTTP 404" in msg and "looked for a local copy at" in msg and "--corpus-dir" in msg and "\n" not in msg


@pytest.mark.parametrize("layout", ["docs/documents.json.bz2", "documents.json.bz2"])
def test_corpus_dir_holds_local_copies_like_rallys_dataset_cache(tmp_path, layout):
    mine = tmp_path / "mine" / layout
    mine.parent.mkdir(parents=True)
    mine.write_bytes(bz2.compress(docs_bytes(3)))
    folder = file_track(tmp_path / "t", "documents.json.bz2", 3, base_url="http://127.0.0.1:9/never")
    t = load_track(folder, {})
    prepare_corpora(t, t.challenge(None), test_mode=False, offline=True, corpus_dir=tmp_path / "mine")
    assert t.corpora[0].documents[0].local_path.read_bytes() == docs_bytes(3)


def test_test_mode_reads_only_first_1000_docs_of_a_file(tmp_path):
    folder = file_track(tmp_path / "t", "documents.json.gz", 2500)
    (folder / "documents.json.gz").write_bytes(gzip.compress(docs_bytes(2500)))
    t = prepared(folder, test_mode=True)
    d = t.corpora[0].documents[0]
    assert d.document_count == 1000
    assert d.local_path.name == "documents-1k.json"
    assert d.local_path.read_bytes() == docs_bytes(1000)


# ---------------------------------------------------------------- downloads (a real HTTP server on 127.0.0.1)


@contextlib.contextmanager
def serve(folder: Path):
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(folder))
    handler.log_message = lambda *a, **k: None  # type: ignore[method-assign]
    with serving(handler) as server:
        yield f"http://127.0.0.1:{server.server_address[1]}/corpora"


def test_download_from_base_url_then_decompress(tmp_path):
    remote = tmp_path / "remote" / "corpora"
    remote.mkdir(parents=True)
    (remote / "documents.json.bz2").write_bytes(bz2.compress(docs_bytes(300)))
    with serve(tmp_path / "remote") as url:
        folder = file_track(tmp_path / "t", "documents.json.bz2", 300, base_url=url)
        t = prepared(folder)
    d = t.corpora[0].documents[0]
    assert (data_dir() / "docs" / "documents.json.bz2").is_file()
    assert d.local_path == data_dir() / "docs" / "documents.json"
    assert d.local_path.read_bytes() == docs_bytes(300)
    assert not list((data_dir() / "docs").glob("*.part"))
    # the cache is used next time: no server needed
    assert prepared(folder).corpora[0].documents[0].local_path == d.local_path


def test_download_errors_name_the_url(tmp_path):
    (tmp_path / "remote" / "corpora").mkdir(parents=True)
    with serve(tmp_path / "remote") as url:
        folder = file_track(tmp_path / "t", "documents.json.bz2", 3, base_url=url)
        with pytest.raises(
            TrackError,
            match=r"cannot download corpus file http://127\.0\.0\.1:\d+/corpora/"
            r"documents\.json\.bz2: HTTP 404",
        ):
            prepared(folder)
    assert not list((data_dir() / "docs").glob("*.part"))


def test_test_mode_download_prefers_the_1k_variant(tmp_path):
    remote = tmp_path / "remote" / "corpora"
    remote.mkdir(parents=True)
    (remote / "documents-1k.json.bz2").write_bytes(bz2.compress(docs_bytes(1000)))
    with serve(tmp_path / "remote") as url:
        folder = file_track(tmp_path / "t", "documents.json.bz2", 5_000_000, base_url=url)
        t = prepared(folder, test_mode=True)
    d = t.corpora[0].documents[0]
    assert d.local_path.read_bytes() == docs_bytes(1000) and d.document_count == 1000
    assert not (data_dir() / "docs" / "documents.json.bz2").exists()  # the full file was not fetched


# ---------------------------------------------------------------- which document sets a bulk uses


def test_bulk_documents_by_corpora_and_indices(tmp_path):
    corpora = [
        {
            "name": "a",
            "documents": [
                {"source-file": "a1.json", "document-count": 1, "target-index": "i1"},
                {"source-file": "a2.json", "document-count": 1, "target-index": "i2"},
            ],
        },
        {"name": "b", "documents": [{"source-file": "b1.json", "document-count": 1, "target-index": "i1"}]},
    ]
    folder = file_track(tmp_path / "t", "x", 1, corpora=corpora)
    t = load_track(folder, {})
    names = lambda ds: [d.source_file for d in ds]
    assert names(bulk_documents(t, {})) == ["a1.json", "a2.json", "b1.json"]
    assert names(bulk_documents(t, {"corpora": "b"})) == ["b1.json"]
    assert names(bulk_documents(t, {"corpora": ["a"], "indices": ["i2"]})) == ["a2.json"]
    with pytest.raises(TrackError, match="unknown corpus 'zzz'"):
        bulk_documents(t, {"corpora": "zzz"})


def test_bulk_referring_to_undefined_corpus_fails_at_load(tmp_path):
    folder = file_track(tmp_path / "t", "x.json", 1)
    track = json.loads((folder / "track.json").read_text())
    track["schedule"][0]["operation"]["corpora"] = "nope"
    (folder / "track.json").write_text(json.dumps(track))
    with pytest.raises(TrackError, match="uses corpora nope that the track does not define"):
        load_track(folder, {}, check_challenge=True)


# ---------------------------------------------------------------- built-in tracks on a real Elasticsearch


@pytest.mark.timeout(420)
def test_builtin_tracks_work_on_real_elasticsearch(tmp_path, monkeypatch, local_engines):
    """Mappings are accepted by the 8.19 integ-test zip, every generated doc indexes under the strict
    mapping, and every search of the tracks runs."""
    from elasticsearch import Elasticsearch

    from tests.support.esnode import default_cache

    monkeypatch.setenv("BENCH_CACHE", default_cache())  # the distribution is downloaded once
    with local_engines.running_cluster(tmp_path / "cluster") as info:
        es = Elasticsearch(**info.client_kwargs(), request_timeout=60)
        for name in ("nginx", "http_logs"):
            t = load_track(find_track(name, None), {}, test_mode=True)
            ch = t.challenge(None)
            prepare_corpora(t, ch, test_mode=True)
            index = t.indices[0]
            es.indices.create(index=index.name, **index.body_content)
            d = t.corpora[0].documents[0]
            lines = d.local_path.read_text().splitlines()
            body = "".join(
                json.dumps({"index": {"_index": d.target_index}}) + "\n" + line + "\n" for line in lines
            )
            resp = es.bulk(operations=body, refresh=True)
            errors = [it["index"]["error"] for it in resp["items"] if "error" in it["index"]]
            assert not errors, errors[:3]
            assert es.count(index=index.name)["count"] == 1000
            for task in ch.tasks():
                op = task.operation
                if op.operation_type == "search":
                    r = es.search(index=op.params["index"], body=op.params["body"])
                    assert r["timed_out"] is False
                    if op.name in ("match-all", "default"):
                        assert r["hits"]["total"]["value"] == 1000
                    if op.name == "term":
                        assert r["hits"]["total"]["value"] > 0
                    if op.name == "per-minute-histogram":
                        assert r["aggregations"]["per_minute"]["buckets"]
            es.indices.delete(index=index.name)
