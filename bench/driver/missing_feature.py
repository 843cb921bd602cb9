"""Failures that mean the cluster lacks a module, plugin or licence feature, named in the failure's own text.

An engine answers a request for a feature it lacks with a message about something else: ``no handler found for uri
[/_ingest/pipeline/p]``, ``No handler for type [scaled_float] declared on field [x]``, ``script_lang not supported
[painless]``, ``unknown query [percolate]``. ``explain`` appends what is missing and what provides it, e.g. ``(the
cluster lacks field type scaled_float: needs the mapper-extras module, in the engine's default distribution)``, so a
race against a minimal build (Maven's integ-test zips) says why its requests failed, not only that they did. Pure:
message in, message out; a message that matches nothing is returned unchanged.
"""

from __future__ import annotations

import functools
import re

_DEFAULT = "in the engine's default distribution, not in a minimal (integ-test) build"
_ES = "Elasticsearch's default distribution"


def _module(name: str, where: str = _DEFAULT) -> str:
    return f"the {name} module ({where})"


# REST API path segment (the first that starts with "_", or two of them) -> (feature, what provides it)
_APIS: dict[str, tuple[str, str]] = {
    "_ingest": ("ingest pipelines", _module("ingest-common")),
    "_search/template": ("search templates", _module("lang-mustache")),
    "_msearch/template": ("search templates", _module("lang-mustache")),
    "_render/template": ("search templates", _module("lang-mustache")),
    "_scripts/painless": ("Painless", _module("lang-painless")),
    "_rank_eval": ("the ranking evaluation API", _module("rank-eval")),
    "_reindex": ("reindex", _module("reindex")),
    "_update_by_query": ("update by query", _module("reindex")),
    "_delete_by_query": ("delete by query", _module("reindex")),
    "_data_stream": ("data streams", _module("x-pack-data-streams", _ES)),
    "_ml": ("machine learning", _module("x-pack-ml", _ES)),
    "_inference": ("the inference API", _module("x-pack-inference", _ES)),
    "_transform": ("transforms", _module("x-pack-transform", _ES)),
    "_eql": ("EQL", _module("x-pack-eql", _ES)),
    "_sql": ("SQL", _module("x-pack-sql", _ES)),
    "_query": ("ES|QL", _module("x-pack-esql", _ES)),
    "_ilm": ("index lifecycle management", _module("x-pack-ilm", _ES)),
    "_slm": ("snapshot lifecycle management", _module("x-pack-slm", _ES)),
    "_ccr": ("cross-cluster replication", _module("x-pack-ccr", _ES)),
    "_enrich": ("enrich policies", _module("x-pack-enrich", _ES)),
    "_rollup": ("rollups", _module("x-pack-rollup", _ES)),
    "_async_search": ("async search", _module("x-pack-async-search", _ES)),
    "_searchable_snapshots": ("searchable snapshots", _module("x-pack-searchable-snapshots", _ES)),
    "_application": ("search applications", _module("x-pack-ent-search", _ES)),
    "_query_rules": ("query rules", _module("x-pack-ent-search", _ES)),
    "_connector": ("connectors", _module("x-pack-ent-search", _ES)),
    "_security": ("the security API", _module("x-pack-security", _ES)),
    "_graph": ("graph explore", _module("x-pack-graph", _ES)),
    "_watcher": ("Watcher", _module("x-pack-watcher", _ES)),
    "_text_structure": ("text structure finding", _module("x-pack-text-structure", _ES)),
    "_fleet": ("Fleet", _module("x-pack-fleet", _ES)),
    "_license": ("licensing", _module("x-pack-core", _ES)),
    "_xpack": ("X-Pack", _module("x-pack-core", _ES)),
    "_terms_enum": ("the terms enum API", _module("x-pack-core", _ES)),
    "_plugins/_knn": ("k-NN", "OpenSearch's k-NN plugin (opensearch-knn)"),
    "_plugins/_ml": ("ML Commons", "OpenSearch's ml-commons plugin"),
    "_plugins/_sql": ("SQL", "OpenSearch's SQL plugin"),
    "_plugins/_ppl": ("PPL", "OpenSearch's SQL plugin"),
    "_plugins/_security": ("the security API", "OpenSearch's security plugin"),
    "_plugins/_replication": ("cross-cluster replication", "OpenSearch's cross-cluster replication plugin"),
}

_MAPPER_EXTRAS = _module("mapper-extras")
# field type -> what provides it
_FIELD_TYPES: dict[str, str] = {
    **dict.fromkeys(("scaled_float", "rank_feature", "rank_features", "search_as_you_type", "token_count",
                     "match_only_text"), _MAPPER_EXTRAS),
    "join": _module("parent-join"),
    "percolator": _module("percolator"),
    "wildcard": _module("x-pack-wildcard", _ES + "; OpenSearch ≥ 2.15"),
    "constant_keyword": _module("x-pack-constant-keyword", _ES + "; OpenSearch ≥ 2.14"),
    "flattened": _module("x-pack-core", _ES + "; OpenSearch calls it flat_object"),
    "unsigned_long": _module("x-pack-unsigned-long", _ES),
    "version": _module("x-pack-mapper-version", _ES),
    "aggregate_metric_double": _module("x-pack-aggregate-metric", _ES),
    "histogram": _module("x-pack-analytics", _ES),
    "geo_shape": _module("x-pack-spatial (or legacy-geo)", _ES + "; OpenSearch's geo module"),
    "shape": _module("x-pack-spatial", _ES),
    "point": _module("x-pack-spatial", _ES),
    "dense_vector": "Elasticsearch ≥ 7.3 (OpenSearch has knn_vector, from its k-NN plugin, instead)",
    "sparse_vector": "Elasticsearch ≥ 8.11 (OpenSearch's neural-search plugin maps rank_features)",
    "semantic_text": _module("x-pack-inference", _ES),
    "counted_keyword": _module("x-pack-mapper-counted-keyword", _ES),
    "pattern_text": _module("x-pack-logsdb", _ES),
    "annotated_text": "the mapper-annotated-text plugin",
    "murmur3": "the mapper-murmur3 plugin",
    "knn_vector": "OpenSearch's k-NN plugin (opensearch-knn)",
}

_SCRIPT_LANGS = {"painless": _module("lang-painless"), "mustache": _module("lang-mustache"),
                 "expression": _module("lang-expression")}

_INGEST = {"geoip": _module("ingest-geoip"), "user_agent": _module("ingest-user-agent"),
           "attachment": "the ingest-attachment plugin", "inference": _module("x-pack-ml", _ES),
           "enrich": _module("x-pack-enrich", _ES)}

_NEURAL = "OpenSearch's neural-search plugin"
_QUERIES = {"percolate": _module("percolator"), "has_child": _module("parent-join"),
            "has_parent": _module("parent-join"), "parent_id": _module("parent-join"),
            "rank_feature": _MAPPER_EXTRAS, "pinned": _module("x-pack-search-business-rules", _ES),
            "rule": _module("x-pack-ent-search", _ES), "rule_query": _module("x-pack-ent-search", _ES),
            "text_expansion": _module("x-pack-ml", _ES), "weighted_tokens": _module("x-pack-ml", _ES),
            "sparse_vector": _module("x-pack-ml", _ES), "semantic": _module("x-pack-inference", _ES),
            "knn": "Elasticsearch ≥ 8.12 or OpenSearch's k-NN plugin", "neural": _NEURAL,
            "hybrid": _NEURAL, "neural_sparse": _NEURAL,
            "geo_shape": _module("x-pack-spatial", _ES), "shape": _module("x-pack-spatial", _ES),
            "geo_grid": _module("x-pack-spatial", _ES)}

_AGGREGATIONS = {
    "matrix_stats": _module("aggs-matrix-stats (Elasticsearch: aggregations)"),
    "time_series": "Elasticsearch ≥ 8.7, its aggregations module (OpenSearch has none)",
    **dict.fromkeys(("adjacency_matrix", "auto_date_histogram", "children", "parent",
                     "bucket_sort", "bucket_selector", "derivative", "serial_diff", "moving_fn"),
                    _module("aggregations (parent-join for children/parent)")),
    **dict.fromkeys(("string_stats", "boxplot", "top_metrics", "t_test", "rate", "multi_terms",
                     "cumulative_cardinality", "moving_percentiles", "normalize"), _module("x-pack-analytics", _ES)),
    **dict.fromkeys(("categorize_text", "frequent_item_sets", "inference"), _module("x-pack-ml", _ES)),
    **dict.fromkeys(("geohex_grid", "geo_line"), _module("x-pack-spatial", _ES)),
}

_ANALYSIS_PLUGINS = (("icu_", "the analysis-icu plugin"), ("kuromoji", "the analysis-kuromoji plugin"),
                     ("smartcn", "the analysis-smartcn plugin"), ("phonetic", "the analysis-phonetic plugin"),
                     ("nori", "the analysis-nori plugin"), ("stempel", "the analysis-stempel plugin"),
                     ("polish", "the analysis-stempel plugin"), ("ukrainian", "the analysis-ukrainian plugin"))

# What the cluster-health runner says of a one-node cluster that stays yellow (its replicas have nowhere to go).
ONE_NODE_REPLICAS = "replica shards cannot be assigned on a one-node cluster"
_NO_HANDLER = re.compile(r"no handler found for uri \[([^\]\s]*)")
# OpenSearch takes an unknown /_name for an index name: the index handlers then refuse the method.
_WRONG_METHOD = re.compile(r"Incorrect HTTP method for uri \[([^\]\s]*)\]")
_FIELD_TYPE = re.compile(r"(?:No handler for type \[|unknown field type \[|no mapper found for type \[|"
                         r"The mapper type \[)([\w.]+)\]", re.I)
_SCRIPT = re.compile(r"(?:script_lang not supported|No script engine found for lang|unable to find script lang)"
                     r" \[(\w+)\]", re.I)
_ANALYSIS = re.compile(r"(?:Unknown (tokenizer|filter|char_filter|analyzer|normalizer) type \[(\w+)\]"
                       r"|failed to find (tokenizer|filter|char_filter|analyzer|normalizer|global tokenizer) "
                       r"under name \[(\w+)\])", re.I)
_PROCESSOR = re.compile(r"No processor type exists with name \[(\w+)\]", re.I)
# OpenSearch's answer to a search pipeline naming a processor no module or plugin registered.
_SEARCH_PROCESSOR = re.compile(r"Invalid processor type ([\w-]+)")
_SEARCH_PROCESSORS = dict.fromkeys(("normalization-processor", "score-ranker-processor", "neural_query_enricher",
                                    "neural_sparse_two_phase_processor", "hybrid_score_explanation", "rerank"),
                                   _NEURAL)
# A cluster setting no installed plugin registers: OpenSearch's plugins' settings by prefix.
_CLUSTER_SETTING = re.compile(r"(?:transient|persistent) setting \[([\w.-]+)\], not recognized")
_PLUGIN_SETTINGS = (("plugins.ppl.", "OpenSearch's SQL plugin (PPL)"), ("plugins.sql.", "OpenSearch's SQL plugin"),
                    ("plugins.query.", "OpenSearch's SQL plugin"), ("opendistro.", "OpenSearch's SQL plugin"),
                    ("plugins.ml_commons.", "OpenSearch's ml-commons plugin"),
                    ("plugins.neural_search.", _NEURAL), ("knn.", "OpenSearch's k-NN plugin (opensearch-knn)"),
                    ("plugins.security.", "OpenSearch's security plugin"),
                    ("plugins.replication.", "OpenSearch's cross-cluster replication plugin"))
_QUERY = re.compile(r"(?:unknown query \[|no \[query\] registered for \[)(\w+)\]", re.I)
_AGG = re.compile(r"Unknown aggregation type \[(\w+)\]|unknown aggregation \[(\w+)\]", re.I)
_SETTING = re.compile(r"unknown setting \[(index\.(?:mode|time_series\.[\w.]+|routing_path|knn[\w.]*|"
                      r"lifecycle\.[\w.]+|look_ahead_time|mapping\.source\.mode))\]")
# Search body keys of newer Elasticsearch versions, which OpenSearch and older versions do not parse.
_SEARCH_KEYS = {"knn": "Elasticsearch ≥ 8.4 (OpenSearch: a knn query, from its k-NN plugin)",
                "retriever": "Elasticsearch ≥ 8.14", "rank": "Elasticsearch ≥ 8.8",
                "sub_searches": "Elasticsearch ≥ 8.8", "runtime_mappings": "Elasticsearch ≥ 7.11 (OpenSearch has none)"}
_SEARCH_KEY = re.compile(r"Unknown key for a (?:START_OBJECT|START_ARRAY|VALUE_\w+) in \[(\w+)\]")
_MAPPER_SCRIPT = re.compile(r"unknown parameter \[(?:script|on_script_error)\] on mapper \[([^\]]+)\]")
_COMPATIBLE = re.compile(r"Content-Type header \[application/vnd\.elasticsearch\+json; ?compatible-with=\d+\] is not "
                         r"supported")
_SOURCE_MODE = re.compile(r"unknown parameter \[mode\] on mapper \[_source\]")
# Template keys of newer Elasticsearch versions ("[template] unknown field [lifecycle]" from OpenSearch's parser).
_TEMPLATE_KEYS = {"lifecycle": "data stream lifecycle (a template's lifecycle): needs Elasticsearch ≥ 8.11 "
                               "(OpenSearch has none)",
                  "data_stream_options": "data stream options (a template's data_stream_options, the failure "
                                         "store): needs Elasticsearch ≥ 8.19 (OpenSearch has none)"}
_TEMPLATE_KEY = re.compile(r"\[template\] unknown field \[(\w+)\]")
_LICENCE = re.compile(r"current license is non-compliant for \[([\w -]+)\]", re.I)
_PIPELINE = re.compile(r"pipeline with id \[([^\]]+)\] does not exist", re.I)


def _api(path: str) -> tuple[str, str] | None:
    """The feature a REST path belongs to, for the APIs a module or plugin serves (an unknown ``_name`` may as well be
    a typo: it is not called missing)."""
    parts = [p for p in path.split("?")[0].split("/") if p]
    for i, p in enumerate(parts):
        if p.startswith("_"):
            return _APIS.get("/".join(parts[i:i + 2])) or _APIS.get(p)
    return None


def _analysis(kind: str, name: str) -> str:
    provider = next((who for prefix, who in _ANALYSIS_PLUGINS if name.startswith(prefix) or prefix in name),
                    _module("analysis-common"))
    return f"the {kind} {name}: needs {provider}"


def missing_feature(message: str) -> str | None:
    """What the cluster lacks according to ``message`` ("the field type scaled_float: needs ..."), or None."""
    if m := _NO_HANDLER.search(message):
        api = _api(m.group(1))
        return None if api is None else f"{api[0]}: needs {api[1]}"
    if (m := _WRONG_METHOD.search(message)) and (api := _api(m.group(1))) is not None:
        return f"{api[0]}: needs {api[1]}"
    if m := _FIELD_TYPE.search(message):
        t = m.group(1)
        return f"the field type {t}: needs {_FIELD_TYPES.get(t, 'the module or plugin that provides it')}"
    if m := _SCRIPT.search(message):
        lang = m.group(1)
        return f"the script language {lang}: needs {_SCRIPT_LANGS.get(lang, 'a module that provides it')}"
    if m := _ANALYSIS.search(message):
        kind, name = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
        return _analysis(kind.lower().replace("global ", ""), name)
    if m := _PROCESSOR.search(message):
        p = m.group(1)
        return f"the ingest processor {p}: needs {_INGEST.get(p, _module('ingest-common'))}"
    if m := _SEARCH_PROCESSOR.search(message):
        p = m.group(1)
        return f"the search pipeline processor {p}: needs {_SEARCH_PROCESSORS.get(p, 'the module or plugin that provides it')}"
    if (m := _CLUSTER_SETTING.search(message)) and (
            who := next((w for prefix, w in _PLUGIN_SETTINGS if m.group(1).startswith(prefix)), None)):
        return f"the cluster setting {m.group(1)}: needs {who}"
    if ONE_NODE_REPLICAS in message:
        return ("a second node for the index's replicas (a replica never shares its primary's node): set "
                "number_of_replicas to 0 where the track reads it (--track-params/--workload-params="
                "number_of_replicas:0) or add nodes")
    if m := _QUERY.search(message):
        q = m.group(1)
        return f"the query {q}: needs {_QUERIES.get(q, 'the module or plugin that provides it')}"
    if m := _AGG.search(message):
        a = m.group(1) or m.group(2)
        return f"the aggregation {a}: needs {_AGGREGATIONS.get(a, 'the module or plugin that provides it')}"
    if m := _SETTING.search(message):
        s = m.group(1)
        if s.startswith("index.knn"):
            return f"the index setting {s}: needs OpenSearch's k-NN plugin (opensearch-knn)"
        if s.startswith("index.lifecycle"):
            return f"the index setting {s}: needs {_module('x-pack-ilm', _ES)}"
        return f"the index setting {s}: needs Elasticsearch ≥ 8 (time-series and logsdb index modes)"
    if (m := _SEARCH_KEY.search(message)) and m.group(1) in _SEARCH_KEYS:
        return f"the search body key {m.group(1)}: needs {_SEARCH_KEYS[m.group(1)]}"
    if m := _MAPPER_SCRIPT.search(message):
        return (f"runtime-computed fields (a script on the mapping of {m.group(1)}): needs Elasticsearch ≥ 7.11 "
                "(OpenSearch has none)")
    if _COMPATIBLE.search(message):
        return ("Elasticsearch's versioned media type, which elasticsearch-py (the track's own code) sends: needs "
                "Elasticsearch")
    if (m := _TEMPLATE_KEY.search(message)) and m.group(1) in _TEMPLATE_KEYS:
        return _TEMPLATE_KEYS[m.group(1)]
    if _SOURCE_MODE.search(message):
        return "synthetic _source (_source.mode): needs Elasticsearch ≥ 8.4 (OpenSearch has none)"
    if m := _LICENCE.search(message):
        return (f"a licence for {m.group(1)}: start a trial licence (POST _license/start_trial?acknowledge=true; "
                "bench does this for the clusters it starts)")
    if m := _PIPELINE.search(message):
        return (f"the ingest pipeline {m.group(1)}, which an earlier step of the track failed to create (look for "
                "its put-pipeline failure: often a cluster without ingest-common)")
    return None


@functools.lru_cache(maxsize=4096)
def explain(message: str) -> str:
    """``message`` after what the cluster lacks, when it says so; else ``message`` as it is."""
    what = missing_feature(message)
    # LACKS anywhere: a bulk's item failures say it per kind of failure (bench.driver.item_errors)
    return message if what is None or LACKS in message else f"{LACKS}{what}{SEPARATOR}{message}"


LACKS = "the cluster lacks "
SEPARATOR = " — "
