"""--generate-corpora: documents made from a track's own mappings, seeded, and a trial that says it was synthetic.

Pure tests of the generator and of which mapping a document set follows; then a real race on the session
Elasticsearch, whose index must hold exactly the generated documents, and whose stored trial, ``bench show`` and
compare warnings say "synthetic"."""

from __future__ import annotations

import json
import random
import urllib.request
from datetime import datetime, timezone
from pathlib import Path

import pytest

from bench.cli import main
from bench.compare.mismatch import mismatch_warnings
from bench.compare.model import Side, TrialData
from bench.track.model import Challenge, DocumentsSpec, Track
from bench.track.synthetic import START, compile_mapping, date_renderer, document_lines, fit_to_size, mean_bytes
from bench.track.synthetic_corpora import Declarations, corpora_text, mapping_for, plan_synthetic
from bench.trials.model import TrialInfo
from bench.trials.sqlite import TrialStore
from bench.util.errors import TrackError

MAPPING = {"mappings": {"dynamic": "strict", "properties": {
    "@timestamp": {"type": "date", "format": "yyyy-MM-dd HH:mm:ss"},
    "msg": {"type": "match_only_text"}, "tag": {"type": "keyword"}, "n": {"type": "short"},
    "price": {"type": "scaled_float", "scaling_factor": 10}, "ok": {"type": "boolean"}, "ip": {"type": "ip"},
    "loc": {"type": "geo_point"}, "vec": {"type": "dense_vector", "dims": 4, "similarity": "dot_product"},
    "kind": {"type": "constant_keyword", "value": "fixed"}, "free": {"type": "constant_keyword"},
    "same": {"type": "alias", "path": "tag"}, "r": {"type": "integer_range"},
    "user": {"properties": {"name": {"type": "keyword"}, "age": {"type": "byte"}}},
    "items": {"type": "nested", "properties": {"sku": {"type": "keyword"}}},
    "when": {"type": "date", "format": "epoch_second"}, "odd": {"type": "some_future_type"}}}}


def _docs(mapping: dict, seed: int = 7, count: int = 50) -> list[dict]:
    return [json.loads(line) for line in document_lines(compile_mapping(mapping), seed, count)]


def test_every_mapped_field_gets_a_value_of_its_type():
    docs = _docs(MAPPING)
    d = docs[0]
    assert datetime.strptime(d["@timestamp"], "%Y-%m-%d %H:%M:%S").replace(tzinfo=timezone.utc) >= START
    assert isinstance(d["msg"], str) and d["msg"].split() and isinstance(d["tag"], str)
    assert all(0 <= x["n"] <= 32_767 for x in docs) and all(isinstance(x["ok"], bool) for x in docs)
    assert all(round(x["price"] * 10, 6) == int(round(x["price"] * 10)) for x in docs)  # scaling factor 10
    assert len(d["ip"].split(".")) == 4 and -90 <= d["loc"]["lat"] <= 90 and -180 <= d["loc"]["lon"] <= 180
    assert all(abs(sum(v * v for v in x["vec"]) - 1) < 1e-4 for x in docs)  # dot_product needs unit length
    assert len(d["vec"]) == 4 and d["kind"] == "fixed"
    assert d["r"]["gte"] <= d["r"]["lte"] and set(d["user"]) == {"name", "age"} and -128 <= d["user"]["age"] < 128
    assert all(1 <= len(x["items"]) <= 3 and set(x["items"][0]) == {"sku"} for x in docs)
    assert isinstance(d["when"], int) and d["when"] >= int(START.timestamp())
    # an alias has no value of its own; a constant_keyword without value is the engine's to fill; unknown: named
    assert not {"same", "free", "odd"} & set(d)
    assert compile_mapping(MAPPING).unknown_types == {"some_future_type": ["odd"]}


def test_same_seed_same_bytes_other_seed_other_documents():
    gen = compile_mapping(MAPPING)
    a = b"".join(document_lines(gen, 3, 100))
    assert a == b"".join(document_lines(compile_mapping(MAPPING), 3, 100))
    assert a != b"".join(document_lines(gen, 4, 100))
    # the action line precedes every document when the corpus includes action-and-meta-data
    lines = list(document_lines(gen, 3, 2, {"create": {"_index": "logs-x"}}))
    assert all(ln.split(b"\n")[0] == b'{"create":{"_index":"logs-x"}}' for ln in lines)


def test_a_wide_mapping_is_thinned_to_the_published_mean_size_and_a_narrow_one_is_left_whole():
    # a mapping of 30 event types with 20 fields each, as github_archive's payloads: every field in every document
    # is several times what the track publishes
    wide = {"mappings": {"properties": {"@timestamp": {"type": "date"}, **{
        f"payload{t}": {"properties": {f"f{k}": {"type": "text" if k % 2 else "keyword"} for k in range(20)}}
        for t in range(30)}}}}
    whole = mean_bytes(compile_mapping(wide), 5)
    target = whole / 6
    gen = fit_to_size(wide, timestamp=True, average_bytes=target, seed=5)
    assert 0.01 <= gen.presence < 0.3
    assert abs(mean_bytes(gen, 11) - target) < 0.25 * target  # measured on other documents than it was fit on
    docs = [json.loads(line) for line in document_lines(gen, 11, 200)]
    assert all("@timestamp" in d for d in docs)  # a data stream needs it in every document
    fields = [sum(len(v) for v in d.values() if isinstance(v, dict)) for d in docs]
    assert len(set(fields)) > 10 and max(fields) < 600 * 0.5  # documents differ in which fields they carry
    assert not any(v == {} or v == [] for d in docs for v in d.values())  # an object with no field is left out
    # same inputs, same bytes
    again = fit_to_size(wide, timestamp=True, average_bytes=target, seed=5)
    assert b"".join(document_lines(gen, 1, 50)) == b"".join(document_lines(again, 1, 50))
    # documents about their published size (or smaller) are made with every field, as before
    narrow = fit_to_size(MAPPING, timestamp=False, average_bytes=mean_bytes(compile_mapping(MAPPING), 5), seed=5)
    assert narrow.presence == 1.0
    assert b"".join(document_lines(narrow, 3, 20)) == b"".join(document_lines(compile_mapping(MAPPING), 3, 20))
    assert fit_to_size(wide, timestamp=True, average_bytes=None, seed=5).presence == 1.0
    # up to 4x the published size is bench's longer values, not a wide mapping: every field stays
    assert fit_to_size(wide, timestamp=True, average_bytes=whole / 3.5, seed=5).presence == 1.0


def test_a_document_set_keeps_its_published_mean_size_through_test_mode():
    d = DocumentsSpec.model_validate({"source-file": "a.json.bz2", "document-count": 1000,
                                      "uncompressed-bytes": 4_500_000})
    assert d.average_bytes == 4500.0
    d.document_count, d.uncompressed_bytes = 10, None  # what test mode does
    assert d.average_bytes == 4500.0


@pytest.mark.parametrize(("fmt", "expected"), [
    (None, "2024-01-01T00:00:05.250Z"), ("strict_date_optional_time||epoch_millis", "2024-01-01T00:00:05.250Z"),
    ("epoch_millis", 1704067205250), ("dd/MM/yyyy", "01/01/2024"), ("yyyy-MM-dd'T'HH:mm:ss.SSSXXX",
                                                                     "2024-01-01T00:00:05.250+00:00"),
    ("basic_date", "20240101"),
])
def test_dates_are_written_in_the_fields_own_format(fmt, expected):
    render = date_renderer(fmt)
    assert render is not None
    assert render(START.replace(second=5, microsecond=250_000)) == expected


def test_a_date_format_bench_cannot_write_leaves_the_field_out_and_says_so():
    gen = compile_mapping({"properties": {"d": {"type": "date", "format": "w/YYYY"}, "k": {"type": "keyword"}}})
    assert gen.unknown_types == {"date": ["d"]}
    assert set(gen.document(random.Random(1), 0)) == {"k"}


def _track(tmp_path: Path, **spec: object) -> Track:
    base = {"name": "t", "root": tmp_path, "challenges": [{"name": "c", "schedule": []}]}
    return Track.model_validate({**base, **spec})


def test_the_mapping_is_what_the_engine_would_apply_templates_then_the_index(tmp_path):
    track = _track(
        tmp_path, indices=[{"name": "logs-1", "body_content": {"mappings": {"properties": {"b": {"type": "long"}}}}}],
        component_templates=[{"name": "base", "template": "x.json", "template_content": {
            "template": {"mappings": {"properties": {"a": {"type": "keyword"}, "b": {"type": "keyword"}}}}}}],
        composable_templates=[
            {"name": "low", "template": "y.json", "template_content": {"index_patterns": ["logs-*"], "priority": 1,
                                                                        "template": {"mappings": {"properties": {
                                                                            "never": {"type": "keyword"}}}}}},
            {"name": "high", "template": "z.json", "template_content": {
                "index_patterns": ["logs-*"], "priority": 9, "composed_of": ["base", "not-in-track"],
                "template": {"mappings": {"properties": {"c": {"type": "ip"}}}}}}])
    mapping, source = mapping_for(Declarations.of(track), "logs-1")
    assert mapping["properties"] == {"a": {"type": "keyword"}, "b": {"type": "long"}, "c": {"type": "ip"}}
    assert source == "component template base + composable template high + index logs-1"
    assert mapping_for(Declarations.of(track), "other") == ({}, "none (no mapping declared)")


def test_templates_the_challenge_itself_puts_count_too(tmp_path):
    # big5 puts its index template with a raw-request before indexing into its data stream
    challenge = Challenge.model_validate({"name": "c", "schedule": [{"name": "tpl", "operation": {
        "name": "tpl", "operation-type": "raw-request", "method": "PUT", "path": "/_index_template/logs-tpl",
        "body": {"index_patterns": ["logs-*"], "data_stream": {},
                 "template": {"mappings": {"properties": {"m": {"type": "text"}}}}}}}]})
    track = _track(tmp_path, data_streams=[{"name": "logs-dev"}],
                   corpora=[{"name": "c", "documents": [{"source-file": "d.json.bz2", "document-count": 10,
                                                         "target-data-stream": "logs-dev"}]}])
    d = track.corpora[0].documents[0]
    plan_synthetic(track, challenge, [("c", d)], seed=5)
    assert d.synthetic is not None and d.synthetic.mapping_of == "composable template logs-tpl"
    assert d.synthetic.data_stream and d.synthetic.seed == 5 and d.synthetic.action is None
    doc = json.loads(next(document_lines(compile_mapping(d.synthetic.mappings, timestamp=True), 1, 1)))
    assert set(doc) == {"@timestamp", "m"}  # a data stream's documents always carry @timestamp


def test_action_lines_go_to_the_tracks_only_index_and_a_set_with_no_target_is_refused(tmp_path):
    track = _track(tmp_path, indices=[{"name": "only"}], corpora=[{"name": "c", "documents": [
        {"source-file": "a.json", "document-count": 1, "includes-action-and-meta-data": True}]}])
    d = track.corpora[0].documents[0]
    plan_synthetic(track, track.challenges[0], [("c", d)], seed=1)
    assert d.synthetic is not None and d.synthetic.action == {"index": {"_index": "only"}}
    bare = DocumentsSpec.model_validate({"source-file": "b.json", "document-count": 1})
    with pytest.raises(TrackError, match="names no target-index or target-data-stream"):
        plan_synthetic(_track(tmp_path), track.challenges[0], [("c", bare)], seed=1)


def test_corpora_text_only_for_synthetic_trials():
    assert corpora_text([{"origin": "file", "documents": 5}]) is None
    text = corpora_text([{"origin": "synthetic", "seed": 3, "documents": 1000}, {"origin": "file", "documents": 5}])
    assert text is not None and text.startswith("SYNTHETIC: 1 of 2 document set(s)") and "seed 3" in text


def test_compare_warns_when_one_side_ran_on_synthetic_corpora():
    def side(label: str, corpora: list[dict]) -> Side:
        info = TrialInfo(id=label * 8, track="t", challenge="c", start_time=datetime.now(timezone.utc),
                         corpora=corpora)
        return Side(label=label, selector=label, trials=[TrialData(info=info)])

    real = [{"origin": "file", "documents": 10}]
    synthetic = [{"origin": "synthetic", "seed": 2, "documents": 10}]
    assert not [w for w in mismatch_warnings([side("a", real), side("b", real)]) if "corpora" in w]
    warnings = [w for w in mismatch_warnings([side("a", real), side("b", synthetic)]) if "corpora" in w]
    assert warnings == ["Trials differ in corpora: a: the track's own; b: synthetic (seed 2)."]


# ---------------------------------------------------------------- a real race


def _write_track(root: Path) -> Path:
    root.mkdir(parents=True)
    (root / "index.json").write_text(json.dumps({"settings": {"index.number_of_shards": 1},
                                                 "mappings": MAPPING["mappings"] | {"properties": {
                                                     k: v for k, v in MAPPING["mappings"]["properties"].items()
                                                     # Maven's Elasticsearch lacks these types' modules
                                                     if k not in ("odd", "price", "msg", "kind", "free")}}}))
    (root / "track.json").write_text(json.dumps({
        "version": 2, "indices": [{"name": "synth", "body": "index.json"}],
        "corpora": [{"name": "synth", "base-url": "https://example.invalid/never",
                     "documents": [{"source-file": "docs.json.bz2", "document-count": 1500, "target-index": "synth"}]}],
        "schedule": [{"operation": {"operation-type": "delete-index"}}, {"operation": {"operation-type": "create-index"}},
                     {"operation": {"name": "index", "operation-type": "bulk", "bulk-size": 100}, "clients": 2},
                     {"operation": {"operation-type": "refresh"}}]}))
    return root


def test_a_race_on_generated_corpora_indexes_them_and_says_synthetic(tmp_path, es_target, capsys):
    track = _write_track(tmp_path / "t")
    # the corpus cannot be downloaded (example.invalid): without the flag the race stops in one line
    assert main(["--quiet", "race", f"--track-path={track}", "--test-mode", f"--target-hosts={es_target}"]) != 0
    assert "corpus 'synth' file docs.json.bz2 is not available" in capsys.readouterr().err
    assert main(["--quiet", "race", f"--track-path={track}", "--test-mode", "--generate-corpora=11",
                 f"--target-hosts={es_target}"]) == 0
    assert "SYNTHETIC: 1 of 1 document set(s)" in capsys.readouterr().out
    with TrialStore() as store:
        trial = store.list_trials()[0]
        df = store.samples(trial.id)
    assert trial.status == "complete" and df["success"].all(), df["error"].dropna().tolist()
    assert trial.corpora == [{"corpus": "synth", "source_file": "docs.json.bz2", "documents": 1000,
                              "origin": "synthetic", "seed": 11, "target": "synth", "mapping": "index synth"}]
    assert df[df["task"] == "index"]["units"].sum() == 1000
    with urllib.request.urlopen(f"http://{es_target.split(',')[0]}/synth/_count") as r:
        assert json.loads(r.read())["count"] == 1000  # the strict mapping took every generated document
    assert main(["show", trial.id]) == 0
    assert "SYNTHETIC: 1 of 1 document set(s) generated by bench from the track's mappings" in capsys.readouterr().out
