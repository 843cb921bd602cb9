"""Rally's corpus-level document properties, inherited by every document set as Rally's loader does: the real
wikipedia track (``includes-action-and-meta-data`` on the corpus) and geoshape (``target-index`` on the corpus)."""

from __future__ import annotations

import json

import pytest

from bench.driver.bulk.bodies import prepare_bodies
from bench.track.loader import load_track
from bench.track.model import CorpusSpec
from tests.support.shared_tree import shared_path

REAL = shared_path("tracks-real", "rally-tracks")
needs_real = pytest.mark.usefixtures("real_track_trees")


@needs_real
def test_wikipedia_corpus_level_action_lines_are_not_indexed_as_documents(tmp_path):
    track = load_track(REAL / "wikipedia", {})
    (docs,) = track.corpus("wikipedia").documents
    assert docs.includes_action_and_meta_data is True
    # Three documents with their action lines: three documents go out, the action lines are not documents.
    lines = [json.dumps({"index": {"_index": "wikipedia", "_id": str(i)}}) + "\n" + json.dumps({"title": f"p{i}"})
             for i in range(3)]
    f = tmp_path / "pages.json"
    f.write_text("\n".join(lines) + "\n")
    docs = docs.model_copy(update={"local_path": f, "document_count": 3})
    (body,) = prepare_bodies([docs], client=0, clients=1, bulk_size=10)
    assert body.docs == 3 and body.body == f.read_bytes()


@needs_real
def test_geoshape_corpus_level_target_index_reaches_every_document_set():
    track = load_track(REAL / "geoshape", {})
    targets = {c.name: [d.target_index for d in c.documents] for c in track.corpora}
    assert targets["linestrings"] == ["osmlinestrings"] and targets["multilinestrings"] == ["osmmultilinestrings"]
    assert all(t and t.startswith("osm") for ts in targets.values() for t in ts)


def test_a_document_sets_own_value_wins_and_every_property_is_inherited():
    corpus = CorpusSpec.model_validate({
        "name": "c", "base-url": "http://x", "includes-action-and-meta-data": True, "target-index": "a",
        "target-data-stream": "ds", "source-format": "bulk",
        "documents": [{"source-file": "1.json", "document-count": 1},
                      {"source-file": "2.json", "document-count": 1, "target-index": "b", "base-url": "http://y",
                       "includes-action-and-meta-data": False}]})
    one, two = corpus.documents
    assert (one.base_url, one.includes_action_and_meta_data, one.target_index, one.target_data_stream) == \
        ("http://x", True, "a", "ds")
    assert (two.base_url, two.includes_action_and_meta_data, two.target_index) == ("http://y", False, "b")


def test_a_source_format_rally_does_not_know_is_refused_from_the_corpus_too():
    with pytest.raises(ValueError, match="source_format|source-format"):
        CorpusSpec.model_validate({"name": "c", "source-format": "csv",
                                   "documents": [{"source-file": "1.json", "document-count": 1}]})


# ---------------------------------------------------------------- bulk bodies from a track's parameter source


@pytest.mark.parametrize("body", [
    [{"create": {"_index": "v"}}, {"emb": [0.5, 1.0]}],                     # random_vector: a list of dicts
    ['{"create":{"_index":"v"}}', '{"emb":[0.5,1.0]}'],                     # a list of str lines
    [b'{"create":{"_index":"v"}}\n', b'{"emb":[0.5,1.0]}\n'],               # bytes lines that end in a newline
    '{"create":{"_index":"v"}}\n{"emb":[0.5,1.0]}',                         # one str, no final newline
    b'{"create":{"_index":"v"}}\n{"emb":[0.5,1.0]}\n',                      # one bytes
])
def test_every_body_form_rally_accepts_from_a_parameter_source_goes_out_as_ndjson(body):
    from bench.driver.custom_sources import bulk_params

    out = bulk_params({"body": body, "bulk-size": 1, "action-metadata-present": True})
    assert out["body"].body == b'{"create":{"_index":"v"}}\n{"emb":[0.5,1.0]}\n' and out["body"].docs == 1


def test_numpy_numbers_in_a_dict_body_are_json_numbers():
    np = pytest.importorskip("numpy")
    from bench.driver.custom_sources import bulk_params

    out = bulk_params({"body": [{"index": {}}, {"x": np.float32(0.25), "v": np.arange(2).tolist()}], "bulk-size": 1})
    assert out["body"].body == b'{"index":{}}\n{"x":0.25,"v":[0,1]}\n'


def test_a_body_of_another_type_is_one_line():
    from bench.driver.custom_sources import bulk_params
    from bench.util.errors import TrackError

    with pytest.raises(TrackError, match="body of type int"):
        bulk_params({"body": 3, "bulk-size": 1})
