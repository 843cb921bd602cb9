"""A request that fails because the cluster lacks a module, plugin or licence says which, in bench's own error text.

The messages are the engines' own (Elasticsearch 8.19 and OpenSearch 2.19/3.6 answers as the census met them);
then a race on the session Elasticsearch (Maven's integ-test build: no mapper-extras, no ingest) whose stored
failures must name both."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.cli import main
from bench.driver.missing_feature import LACKS, explain, missing_feature
from bench.driver.runners.core import error_reason
from bench.trials.sqlite import TrialStore


@pytest.mark.parametrize(("message", "lacks"), [
    # OpenSearch 3.6.0's answers as bench reports them, the innermost cause after the wrapper (census, 2026-11-26)
    ("HTTP 400: x_content_parse_exception: [1:28] [component_template] failed to parse field [template] (caused by "
     "x_content_parse_exception: [1:15] [template] unknown field [lifecycle])",
     "data stream lifecycle (a template's lifecycle): needs Elasticsearch ≥ 8.11"),
    ("HTTP 400: parsing_exception: Unknown aggregation type [time_series] (caused by named_object_not_found_exception: "
     "[1:132] unknown field [time_series])", "the aggregation time_series: needs Elasticsearch ≥ 8.7"),
    ("HTTP 400: illegal_argument_exception: composable template [vector-index-template] template after composition "
     "is invalid (caused by mapper_parsing_exception: No handler for type [dense_vector] declared on field [emb])",
     "the field type dense_vector: needs Elasticsearch ≥ 7.3"),
    ("HTTP 400: mapper_parsing_exception: Failed to parse mapping: No handler for type [scaled_float] declared on "
     "field [price]", "the field type scaled_float: needs the mapper-extras module"),
    ("HTTP 400: mapper_parsing_exception: No handler for type [match_only_text] declared on field [message]",
     "the field type match_only_text: needs the mapper-extras module"),
    ("HTTP 400: mapper_parsing_exception: Failed to parse mapping: The mapper type [constant_keyword] declared on "
     "field [kind] does not exist. It might have been created within a future version or requires a plugin to be "
     "installed. Check the documentation.", "the field type constant_keyword: needs the x-pack-constant-keyword"),
    ("HTTP 400: mapper_parsing_exception: No handler for type [wildcard] declared on field [url]",
     "the field type wildcard: needs the x-pack-wildcard module"),
    ("HTTP 400: mapper_parsing_exception: No handler for type [join] declared on field [rel]",
     "the field type join: needs the parent-join module"),
    ("HTTP 400: {'error': 'no handler found for uri [/_ingest/pipeline/p1] and method [PUT]'}",
     "ingest pipelines: needs the ingest-common module"),
    ("HTTP 400: no handler found for uri [/endgame/_eql/search?x=1] and method [POST]", "EQL: needs the x-pack-eql"),
    ("HTTP 400: no handler found for uri [/_query] and method [POST]", "ES|QL: needs the x-pack-esql module"),
    ("HTTP 400: no handler found for uri [/_search/template] and method [GET]",
     "search templates: needs the lang-mustache module"),
    ("HTTP 400: no handler found for uri [/_plugins/_knn/stats] and method [GET]", "k-NN: needs OpenSearch's k-NN"),
    ("HTTP 400: illegal_argument_exception: script_lang not supported [painless]",
     "the script language painless: needs the lang-painless module"),
    ("HTTP 400: illegal_argument_exception: Unknown filter type [pattern_capture] for [my_filter]",
     "the filter pattern_capture: needs the analysis-common module"),
    ("HTTP 400: illegal_argument_exception: failed to find global tokenizer under name [icu_tokenizer]",
     "the tokenizer icu_tokenizer: needs the analysis-icu plugin"),
    ("HTTP 400: parse_exception: No processor type exists with name [geoip]",
     "the ingest processor geoip: needs the ingest-geoip module"),
    ("HTTP 400: parsing_exception: unknown query [percolate]", "the query percolate: needs the percolator module"),
    ("HTTP 400: parsing_exception: unknown query [has_child] did you mean [has_parent]?",
     "the query has_child: needs the parent-join module"),
    ("HTTP 400: x_content_parse_exception: [1:30] Unknown aggregation type [matrix_stats]",
     "the aggregation matrix_stats: needs the aggs-matrix-stats"),
    ("HTTP 400: settings_exception: unknown setting [index.mode] please check that any required plugins are "
     "installed", "the index setting index.mode: needs Elasticsearch ≥ 8"),
    ("HTTP 400: parsing_exception: Unknown key for a START_OBJECT in [knn].",
     "the search body key knn: needs Elasticsearch ≥ 8.4"),
    ("HTTP 400: mapper_parsing_exception: Failed to parse mapping [_doc]: unknown parameter [mode] on mapper "
     "[_source] of type [null]", "synthetic _source (_source.mode): needs Elasticsearch ≥ 8.4"),
    ("HTTP 405: {'error': 'Incorrect HTTP method for uri [/_query] and method [POST], allowed: [GET, HEAD, PUT, "
     "DELETE]', 'status': 405}", "ES|QL: needs the x-pack-esql module"),
    ("HTTP 400: mapper_parsing_exception: Failed to parse mapping [_doc]: unknown parameter [script] on mapper "
     "[size] of type [double]", "runtime-computed fields (a script on the mapping of size)"),
    ("HTTP 406: Content-Type header [application/vnd.elasticsearch+json; compatible-with=8] is not supported",
     "Elasticsearch's versioned media type, which elasticsearch-py (the track's own code) sends: needs Elasticsearch"),
    ("HTTP 403: security_exception: current license is non-compliant for [ccr]", "a licence for ccr: start a trial"),
    ("1 of 5 documents failed, first: illegal_argument_exception: pipeline with id [p1] does not exist",
     "the ingest pipeline p1, which an earlier step"),
    # OpenSearch 3.6.0's answers to OSB's clickbench and noaa_semantic_search workloads (the OSB census)
    ("HTTP 400: settings_exception: transient setting [plugins.ppl.syntax.legacy.preferred], not recognized",
     "the cluster setting plugins.ppl.syntax.legacy.preferred: needs OpenSearch's SQL plugin"),
    ("HTTP 400: illegal_argument_exception: Invalid processor type normalization-processor",
     "the search pipeline processor normalization-processor: needs OpenSearch's neural-search plugin"),
    ("HTTP 400: parsing_exception: unknown query [hybrid]", "the query hybrid: needs OpenSearch's neural-search"),
    ("cluster health is yellow, expected green: 3 replica shards cannot be assigned on a one-node cluster",
     "a second node for the index's replicas"),
])
def test_engine_messages_name_what_the_cluster_lacks(message, lacks):
    what = missing_feature(message)
    assert what is not None and what.startswith(lacks), what
    assert explain(message) == f"{LACKS}{what} — {message}"


@pytest.mark.parametrize("message", [
    "HTTP 404: index_not_found_exception: no such index [logs]", "request timed out",
    "HTTP 400: parsing_exception: Unknown key for a START_OBJECT in [qurey].",  # a typo is not a missing feature
    "HTTP 400: no handler found for uri [/_no_such_endpoint] and method [GET]",  # nor an API bench does not know
    "HTTP 429: es_rejected_execution_exception: rejected execution", "connection error: refused",
    "HTTP 405: Incorrect HTTP method for uri [/] and method [GET], allowed: [HEAD]",  # not a missing feature
    # a setting no plugin of OpenSearch's registers is a typo as likely as a missing plugin
    "HTTP 400: settings_exception: transient setting [search.no_such_thing], not recognized",
    "cluster health is yellow, expected green",  # a yellow cluster of several nodes may just be slow
])
def test_other_failures_are_left_as_they_are(message):
    assert missing_feature(message) is None and explain(message) == message


def test_an_error_says_its_innermost_cause_when_it_says_something_else():
    wrapped = {"type": "illegal_argument_exception", "reason": "template after composition is invalid",
               "caused_by": {"type": "illegal_argument_exception", "reason": "invalid composite mappings",
                             "caused_by": {"type": "mapper_parsing_exception",
                                           "reason": "No handler for type [dense_vector] declared on field [emb]"}}}
    assert error_reason(wrapped) == ("illegal_argument_exception: template after composition is invalid (caused by "
                                     "mapper_parsing_exception: No handler for type [dense_vector] declared on "
                                     "field [emb])")
    same = {"type": "x", "reason": "index [i] missing", "caused_by": {"type": "x", "reason": "index [i] missing"}}
    assert error_reason(same) == "x: index [i] missing"
    assert error_reason({"type": "x", "reason": "r"}) == "x: r"


def test_explaining_twice_adds_nothing():
    once = explain("HTTP 400: parsing_exception: unknown query [percolate]")
    assert explain(once) == once


def test_a_race_on_a_minimal_cluster_stores_what_it_lacks(tmp_path: Path, es_target: str):
    root = tmp_path / "t"
    root.mkdir()
    (root / "track.json").write_text(json.dumps({"version": 2, "schedule": [
        {"operation": {"name": "scaled", "operation-type": "raw-request", "method": "PUT", "path": "/lacks-scaled",
                       "body": {"mappings": {"properties": {"p": {"type": "scaled_float", "scaling_factor": 10}}}}}},
        {"operation": {"name": "pipeline", "operation-type": "put-pipeline", "id": "lacks-p",
                       "body": {"processors": [{"set": {"field": "a", "value": 1}}]}}},
    ]}))
    # both tasks fail on this minimal cluster: nothing was measured (exit 4), and each failure names what it lacks
    assert main(["--quiet", "race", f"--track-path={root}", f"--target-hosts={es_target}"]) == 4
    with TrialStore() as store:
        trial = store.list_trials()[0]
        df = store.samples(trial.id)
    errors = dict(zip(df["task"], df["error"]))
    assert errors["scaled"].startswith("the cluster lacks the field type scaled_float: needs the mapper-extras "
                                       "module (in the engine's default distribution"), errors
    assert "HTTP 400" in errors["scaled"] and "scaled_float" in errors["scaled"].split(" — ", 1)[1]
    # this build serves the ingest API but has no processors: the processor is what it lacks
    assert errors["pipeline"].startswith("the cluster lacks the ingest processor set: needs the ingest-common "
                                         "module"), errors
