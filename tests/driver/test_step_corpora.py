"""A load-driver worker on another machine prepares its step's document sets itself (``bench.driver.bulk.step_corpora``):
from the same sources into its own data cache, the same documents, each file fetched once per machine."""

from __future__ import annotations

import bz2
import contextlib
import http.server
import json
import pickle
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.driver.bulk.step_corpora import prepare_step_documents, step_corpora
from bench.track.corpus import CorpusRecipe, bulk_documents, prepare_corpora, prepare_document_set
from bench.track.loader import load_track
from bench.util.home import data_dir
from tests.support.http_serving import serving
from tests.track.test_corpus import docs_bytes

DOCS = 1500


@contextlib.contextmanager
def counting_server(folder: Path, delay: float = 0.0) -> Iterator[tuple[str, list[str]]]:
    """Serves ``folder``; yields its URL and the paths asked for (each GET, answered after ``delay`` s)."""
    asked: list[str] = []

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *a, **k) -> None:  # type: ignore[no-untyped-def]
            super().__init__(*a, directory=str(folder), **k)

        def do_GET(self) -> None:
            asked.append(self.path)
            time.sleep(delay)
            super().do_GET()

        def log_message(self, *a) -> None:  # type: ignore[no-untyped-def]
            pass

    with serving(Handler) as server:
        yield f"http://127.0.0.1:{server.server_address[1]}", asked


def use_home(monkeypatch: pytest.MonkeyPatch, home: Path) -> None:
    """This process is now a machine whose data cache is under ``home``."""
    monkeypatch.setenv("BENCH_HOME", str(home))
    monkeypatch.delenv("BENCH_CACHE", raising=False)


def two_corpus_track(folder: Path, url: str) -> Path:
    """A downloaded, compressed file and a generated set, each read by two bulk tasks."""
    folder.mkdir(parents=True, exist_ok=True)
    corpora = [{"name": "files", "base-url": url,
                "documents": [{"source-file": "documents.json.bz2", "document-count": DOCS, "target-index": "d"}]},
               {"name": "made", "documents": [{"source-file": "nginx.json", "document-count": DOCS,
                                               "target-index": "n", "generator": {"name": "nginx", "seed": 3}}]}]
    bulk = {"operation-type": "bulk", "bulk-size": 100}
    schedule = [{"name": "first", "operation": {**bulk, "name": "first"}},
                {"name": "second", "operation": {**bulk, "name": "second"}}]
    (folder / "track.json").write_text(json.dumps({"indices": [{"name": "d"}, {"name": "n"}], "corpora": corpora,
                                                   "schedule": schedule}))
    return folder


@pytest.mark.parametrize("test_mode", [False, True])
def test_a_worker_elsewhere_prepares_the_same_documents_in_its_own_cache(tmp_path: Path, test_mode: bool,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    remote = tmp_path / "remote"
    remote.mkdir()
    (remote / "documents.json.bz2").write_bytes(bz2.compress(docs_bytes(DOCS)))
    with counting_server(remote) as (url, asked):
        use_home(monkeypatch, tmp_path / "coordinator")
        track = load_track(two_corpus_track(tmp_path / "t", url), {}, test_mode=test_mode)
        challenge = track.challenge(None)
        prepare_corpora(track, challenge, test_mode=test_mode)
        documents = {t.name: bulk_documents(track, t.operation.params) for t in challenge.tasks()}
        here = {d.source_file: d.local_path for docs in documents.values() for d in docs}
        corpora = step_corpora(CorpusRecipe(track.root, test_mode=test_mode), track, documents)
        assert corpora.names == {"first": ["files", "made"], "second": ["files", "made"]}
        # What a worker receives: the plan pickled, the coordinator's paths in it meaning nothing there.
        sent_docs, sent_corpora = pickle.loads(pickle.dumps((documents, corpora)))
        use_home(monkeypatch, tmp_path / "worker")
        fetched = len(asked)
        assert prepare_step_documents(sent_corpora, sent_docs, {"first", "second"}) == 2  # shared sets: once each
    assert len(asked) == fetched + (1 if not test_mode else 2)  # test mode tries the 1k variant (404) first
    want = 1000 if test_mode else DOCS
    for d in sent_docs["first"]:
        assert d.local_path is not None and d.local_path.is_relative_to(tmp_path / "worker" / "data")
        assert d.document_count == want
        assert d.local_path.read_bytes() == here[d.source_file].read_bytes()  # the same documents
        assert d.local_path.read_bytes().count(b"\n") == want
    assert sent_docs["second"][0] is sent_docs["first"][0]


def test_workers_of_one_machine_fetch_a_document_set_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Four workers of one Ray node preparing the same set at once: one downloads and decompresses, the others wait
    # on the set's lock file and then find the file ready. The slow server makes every worker arrive while the
    # first one downloads.
    remote = tmp_path / "remote"
    remote.mkdir()
    (remote / "documents.json.bz2").write_bytes(bz2.compress(docs_bytes(DOCS)))
    use_home(monkeypatch, tmp_path / "node")
    with counting_server(remote, delay=0.5) as (url, asked):
        track = load_track(two_corpus_track(tmp_path / "t", url), {})
        recipe = CorpusRecipe(track.root)
        spec = track.corpus("files").documents[0]
        paths: list[Path] = []
        errors: list[BaseException] = []

        def worker() -> None:
            try:
                paths.append(prepare_document_set("files", spec.model_copy(), recipe))
            except BaseException as e:  # noqa: BLE001 - re-raised by the test
                errors.append(e)

        threads = [threading.Thread(target=worker) for _ in range(4)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(60)
    assert not errors, errors
    assert asked == ["/documents.json.bz2"]
    assert paths == [data_dir() / "files" / "documents.json"] * 4
    assert paths[0].read_bytes() == docs_bytes(DOCS)
    assert list((data_dir() / ".locks").glob("documents.json-*.lock"))
