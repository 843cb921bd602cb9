"""Track processors as Rally runs them (elastic/logs' shape): ``on_after_load_track`` reads and changes challenge
parameters and appends a corpus whose documents it generates in ``on_prepare_track``; bench takes the parameters
and the corpus into the track it runs, reads the generated files' counts after preparing them, and indexes them.
``esrally.driver.runner.runner_for``/``unwrap`` resolve the track's own runners."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.track import plugins as track_plugins
from bench.track import processors
from bench.track.loader import load_track
from bench.util.errors import TrackError
from tests.track.test_track_code import one_line, race, samples, write

DOCS = 150

CODE = '''
import hashlib, json, os

from esrally.track import DocumentCorpus, Documents
from esrally.track.loader import DocumentSetPreparator
from esrally.driver.runner import runner_for, unwrap


class Generated(Documents):
    """Like elastic/logs' LazyMetadataDocuments: the count is only known once the file is generated."""
    def __init__(self, document_file):
        super().__init__(source_format=Documents.SOURCE_FORMAT_BULK, document_file=document_file, target_index="gen")
        self.root = None

    @property
    def number_of_documents(self):
        try:
            with open(os.path.join(self.root or "", self.document_file + ".count")) as f:
                return int(f.read())
        except (FileNotFoundError, TypeError):
            return 0

    @number_of_documents.setter
    def number_of_documents(self, value):
        pass


GENERATED = []


def generate(path, docs):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        for i in range(docs):
            f.write(json.dumps({"n": i}) + "\\n")
    with open(path + ".count", "w") as f:
        f.write(str(docs))


class DataGenerator:
    def __init__(self):
        self.downloader = None
        self.decompressor = None

    def on_after_load_track(self, track):
        p = track.selected_challenge_or_default.parameters
        p["track-id"] = hashlib.md5(json.dumps(p, sort_keys=True).encode()).hexdigest()[:8]
        doc = Generated(os.path.join("generated", p["track-id"], "0.json"))
        GENERATED.append(doc)
        track.corpora.append(DocumentCorpus(name="gen", documents=[doc], meta_data={"generated": True}))

    def on_prepare_track(self, track, data_root_dir):
        assert isinstance(self.downloader.offline, bool) and DocumentSetPreparator
        p = track.selected_challenge_or_default.parameters
        for d in GENERATED:
            d.root = os.path.join(data_root_dir, "gen")
        path = os.path.join(data_root_dir, "gen", "generated", p["track-id"], "0.json")
        return [(generate, {"path": path, "docs": p["docs"]})]


async def echo(es, params):
    return {"weight": 1, "unit": "ops", "echo": params.get("value")}


async def via_runner_for(es, params):
    return await unwrap(runner_for("echo"))(es, {"value": 7})


def register(registry):
    registry.register_track_processor(DataGenerator())
    registry.register_runner("echo", echo, async_runner=True)
    registry.register_runner("via-runner-for", via_runner_for, async_runner=True)
'''

TRACK = {
    "parameters": {"docs": 10, "shared": {"a": 1}},
    "indices": [{"name": "gen"}],
    "challenges": [{
        "name": "generate-and-index", "default": True,
        "parameters": {"docs": DOCS, "shared": {"b": 2}},
        "schedule": [
            {"operation": {"operation-type": "delete-index"}},
            {"operation": {"operation-type": "create-index"}},
            {"operation": {"name": "index", "operation-type": "bulk", "corpora": "gen", "bulk-size": 50}},
            {"operation": {"operation-type": "refresh"}},
            {"operation": {"name": "wrapped", "operation-type": "via-runner-for"}},
        ]}],
}


def generating_track(root: Path) -> Path:
    return write(root, {"track.py": CODE, "track.json": TRACK})


def test_challenge_parameters_merge_over_the_tracks_and_a_processor_adds_a_corpus(tmp_path: Path,
                                                                                  monkeypatch) -> None:
    monkeypatch.setenv("BENCH_HOME", str(tmp_path / "home"))
    track = load_track(generating_track(tmp_path / "t"), {})
    ch = track.find_challenge(None)
    # Rally's merge: the challenge's value wins, nested objects merge; the processor's track id is kept too
    assert ch.parameters["docs"] == DOCS and ch.parameters["shared"] == {"a": 1, "b": 2}
    assert len(ch.parameters["track-id"]) == 8
    gen = track.corpus("gen")
    assert gen.meta == {"generated": True}
    assert gen.documents[0].source_file == f"generated/{ch.parameters['track-id']}/0.json"
    assert gen.documents[0].document_count == 0  # not generated yet

    data = tmp_path / "data"
    plugins = track_plugins.plugins_of(track)
    assert processors.run_prepare(track, plugins, data, ch.name) == 1
    d = gen.documents[0]
    assert d.document_count == DOCS  # read again from the processor's own object after on_prepare_track
    assert d.local_path == data / "gen" / d.source_file and d.local_path.is_file()


def test_a_processor_replacing_the_corpora_is_refused(tmp_path: Path) -> None:
    code = ("class P:\n    def on_after_load_track(self, track):\n        track.corpora = []\n\n"
            "def register(registry):\n    registry.register_track_processor(P())\n")
    track = write(tmp_path / "t", {"track.py": code, "track.json": {
        "indices": [{"name": "i"}], "corpora": [{"name": "c", "documents": [{"source-file": "d.json",
                                                                              "document-count": 1}]}],
        "schedule": [{"operation": "refresh"}]}})
    with pytest.raises(TrackError, match="changed the track in on_after_load_track beyond"):
        load_track(track, {})


def test_a_corpus_without_files_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = ("from esrally.track import DocumentCorpus, Documents\n\nclass P:\n"
            "    def on_after_load_track(self, track):\n"
            "        track.corpora.append(DocumentCorpus('x', [Documents('bulk')]))\n\n"
            "def register(registry):\n    registry.register_track_processor(P())\n")
    track = write(tmp_path / "t", {"track.py": code, "track.json": {"indices": [{"name": "i"}],
                                                                     "schedule": [{"operation": "refresh"}]}})
    rc, err = race(capsys, f"--track-path={track}", "--target-hosts=127.0.0.1:9")
    assert rc == 2
    one_line(err, "track processor P added corpus 'x'", "neither a document_file nor a document_archive")


def test_runner_for_a_type_bench_runs_itself_is_ralllys_error() -> None:
    from bench.compat import names as esrally_names

    esrally_names.install()
    from esrally import exceptions
    from esrally.driver.runner import runner_for

    with pytest.raises(exceptions.RallyError, match=r"No runner available for operation-type: \[raw-request\]"):
        runner_for("raw-request")


def test_the_generated_corpus_is_indexed(tmp_path: Path, es_target: str,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    rc, err = race(capsys, f"--track-path={generating_track(tmp_path / 't')}", f"--target-hosts={es_target}")
    assert rc == 0, err
    df = samples()
    assert not (df["success"] == False).any()  # noqa: E712 - a pandas column
    from elasticsearch import Elasticsearch

    with Elasticsearch(f"http://{es_target.split(',')[0]}") as es:
        assert es.count(index="gen")["count"] == DOCS
    wrapped = df[df["task"] == "wrapped"]
    assert len(wrapped) == 1 and json.loads(wrapped["meta"].iloc[0]).get("echo") == 7
