"""Loading Rally-format tracks: rendering, parameters, validation, errors, test mode."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.track.loader import find_track, list_tracks, load_track
from bench.track.model import Parallel
from bench.track.rally_helpers import days_ago
from bench.track.track_params import parse_params
from bench.util.errors import BenchError, ConfigError, TrackError

DATA = Path(__file__).parents[1] / "data"
GEONAMES = DATA / "rally_geonames"


@pytest.fixture(autouse=True)
def _homes(tmp_path, monkeypatch):
    monkeypatch.setenv("BENCH_HOME", str(tmp_path / "home"))


def write_track(folder: Path, track: dict | str, files: dict[str, str] | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "track.json").write_text(track if isinstance(track, str) else json.dumps(track, indent=2))
    for name, text in (files or {}).items():
        p = folder / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return folder


# ---------------------------------------------------------------- params


def test_parse_params_types_values():
    p = parse_params('a:1,b:2.5,c:true,d:False,e:hello,f:[1,2],g:{"x":1},h:null,i:')
    assert p == {
        "a": 1,
        "b": 2.5,
        "c": True,
        "d": False,
        "e": "hello",
        "f": [1, 2],
        "g": {"x": 1},
        "h": None,
        "i": "",
    }
    assert isinstance(p["a"], int) and isinstance(p["c"], bool)


def test_parse_params_from_json_file(tmp_path):
    f = tmp_path / "params.json"
    f.write_text('{"bulk_size": 100, "name": "x"}')
    assert parse_params(str(f)) == {"bulk_size": 100, "name": "x"}
    assert parse_params(None) == {} and parse_params("  ") == {}


def test_parse_params_errors_name_the_problem(tmp_path):
    with pytest.raises(ConfigError, match=r"car params: 'oops' is not key:value"):
        parse_params("a:1,oops", what="car params")
    bad = tmp_path / "bad.json"
    bad.write_text('{"a": 1,,}')
    with pytest.raises(ConfigError, match=r"bad.json is not valid JSON at line 1 column"):
        parse_params(str(bad))
    with pytest.raises(ConfigError, match="does not exist"):
        parse_params(str(tmp_path / "nope.json"))


# ---------------------------------------------------------------- finding tracks


def test_builtin_tracks_are_listed_with_challenges():
    listing = {t.name: t for t in list_tracks()}
    assert {"nginx", "http_logs"} <= set(listing)
    for name in ("nginx", "http_logs"):
        assert {"append-no-conflicts", "index-only"} <= set(listing[name].challenges)
        assert listing[name].default_challenge == "append-no-conflicts"
        assert listing[name].description


def test_find_track_errors_list_builtin_tracks(tmp_path):
    assert find_track("nginx", None).name == "nginx"
    with pytest.raises(TrackError, match=r"unknown track 'geonamez'.*http_logs, nginx"):
        find_track("geonamez", None)
    with pytest.raises(TrackError, match="no track.json"):
        find_track(None, tmp_path)
    assert find_track("ignored", GEONAMES) == GEONAMES.resolve()


# ---------------------------------------------------------------- a real Rally track


def test_rally_track_loads_unchanged():
    t = load_track(GEONAMES, {"bulk_size": 1000, "refresh_interval": "30s"})
    assert t.name == "rally_geonames"
    assert [c.name for c in t.challenges] == [
        "append-no-conflicts",
        "append-no-conflicts-index-only",
        "index-and-query",
    ]
    default = t.challenge(None)
    assert default.name == "append-no-conflicts" and default.index_settings == {"index.number_of_replicas": 0}
    # index body rendered with params; exists_set_param added the setting only because it was given
    assert t.indices[0].body_content["settings"] == {
        "index.number_of_shards": 5,
        "index.number_of_replicas": 0,
        "index.refresh_interval": "30s",
    }
    # corpus inherits base-url and the only index as target
    docs = t.corpora[0].documents[0]
    assert docs.base_url == "https://rally-tracks.elastic.co/geonames" and docs.target_index == "geonames"
    tasks = {x.name: x for x in default.tasks()}
    # names default to the operation name; undeclared names become operations of that type (Rally)
    assert tasks["delete-index"].operation.operation_type == "delete-index"
    assert tasks["index-append"].operation.params["bulk-size"] == 1000
    assert tasks["index-append"].clients == 8 and tasks["index-append"].warmup_time_period == 120
    assert tasks["create-index"].operation.params == {}  # exists_set_param without a value adds nothing
    assert tasks["term"].iterations == 1000 and tasks["term"].target_throughput == 200
    # neither iterations nor time-period: both stay None (bulk runs until the corpus is consumed)
    assert tasks["index-append"].iterations is None and tasks["index-append"].time_period is None


def test_parallel_defaults_and_completed_by():
    t = load_track(GEONAMES, {})
    ch = t.challenge("index-and-query")
    par = ch.schedule[0]
    assert isinstance(par, Parallel) and par.completed_by == "index-append"
    by = {x.name: x for x in par.tasks}
    assert by["index-append"].clients == 8  # own value wins
    assert by["default-while-indexing"].clients == 2  # parallel default
    assert all(x.warmup_time_period == 30 for x in par.tasks)
    assert by["term-while-indexing"].time_period == 60 and by["term-while-indexing"].schedule == "poisson"
    assert ch.schedule[1].target_interval == 0.5 and ch.schedule[1].ops_per_second == 2.0


def test_exists_set_param_with_value():
    t = load_track(GEONAMES, {"index_settings": {"index.number_of_shards": 2}})
    create = next(x for x in t.challenge(None).tasks() if x.name == "create-index")
    assert create.operation.params == {"settings": {"index.number_of_shards": 2}}


def test_unknown_challenge_lists_challenges():
    t = load_track(GEONAMES, {})
    with pytest.raises(
        TrackError, match=r"unknown challenge 'nope'.*append-no-conflicts, append-no-conflicts-index-only"
    ):
        t.challenge("nope")


# ---------------------------------------------------------------- parameters used / unused


def test_unused_params_are_an_error_naming_them_and_listing_used():
    with pytest.raises(TrackError) as e:
        load_track(GEONAMES, {"bulk_sise": 10, "number_of_shards": 1})
    msg = str(e.value)
    assert "bulk_sise" in msg and "\n" not in msg
    # used params come from track.json, collected parts and the index body
    for used in (
        "bulk_size",
        "bulk_indexing_clients",
        "number_of_shards",
        "refresh_interval",
        "source_enabled",
    ):
        assert used in msg.split("it uses:")[1]
    assert "rally" not in msg.split("it uses:")[1].split(", ")
    t = load_track(GEONAMES, {"bulk_sise": 10}, ignore_unused=True)
    assert t.params == {"bulk_sise": 10}


def test_builtin_tracks_accept_their_documented_params():
    params = {
        "number_of_shards": 2,
        "number_of_replicas": 0,
        "bulk_size": 100,
        "bulk_indexing_clients": 2,
        "doc_count": 5000,
        "seed": 7,
        "ingest_percentage": 50,
    }
    for name in ("nginx", "http_logs"):
        t = load_track(find_track(name, None), params)
        docs = t.corpora[0].documents[0]
        assert docs.document_count == 5000 and docs.generator.seed == 7
        bulk = next(x for x in t.challenge(None).tasks() if x.operation.operation_type == "bulk")
        assert bulk.clients == 2 and bulk.operation.params["bulk-size"] == 100
        assert bulk.operation.params["ingest-percentage"] == 50
        assert t.indices[0].body_content["settings"]["index.number_of_shards"] == 2


# ---------------------------------------------------------------- errors point at file, line, field


def test_json_error_in_rendered_track_gives_line_column_and_line():
    with pytest.raises(TrackError) as e:
        load_track(DATA / "bad_json", {})
    msg = str(e.value)
    assert "bad_json/track.json (rendered track) line 11 column 3" in msg
    assert 'offending line: "schedule": [' in msg and "\n" not in msg


def test_jinja_syntax_error_names_the_included_file_and_line():
    with pytest.raises(TrackError, match=r"bad_jinja/operations/search.json:5: Jinja2 syntax error"):
        load_track(DATA / "bad_jinja", {})


def test_jinja_syntax_error_in_main_file(tmp_path):
    write_track(tmp_path / "t", '{\n  "a": {{ 1 + }}\n}')
    with pytest.raises(TrackError, match=r"t/track.json:2: Jinja2 syntax error"):
        load_track(tmp_path / "t", {})


def test_unknown_operation_type_is_a_load_error():
    with pytest.raises(
        TrackError,
        match=r"unknown_op/track.json: challenge 'default', task 'stats': operation 'stats' has unsupported "
        r"operation-type 'reindex'",
    ):
        load_track(DATA / "unknown_op", {}, check_challenge=True)


def test_inline_unknown_operation_type(tmp_path):
    write_track(tmp_path / "t", {"schedule": [{"operation": {"operation-type": "frobnicate"}}]})
    with pytest.raises(TrackError, match="unsupported operation-type 'frobnicate'"):
        load_track(tmp_path / "t", {}, check_challenge=True)
    with pytest.raises(TrackError, match="unsupported operation-type 'frobnicate'"):
        load_track(tmp_path / "t", {}).challenge(None)  # what race does


def _track_with_clients(clients):
    return {
        "operations": [{"name": "s", "operation-type": "search", "index": "x"}],
        "challenges": [
            {
                "name": "c",
                "schedule": [
                    {"operation": "s"},
                    {"name": "s2", "operation": "s"},
                    {"name": "s3", "operation": "s", "clients": clients},
                ],
            }
        ],
    }


def test_validation_error_names_file_and_field_path(tmp_path):
    write_track(tmp_path / "t", _track_with_clients(0))
    with pytest.raises(TrackError) as e:
        load_track(tmp_path / "t", {})
    msg = str(e.value)
    assert "t/track.json: challenges[0].schedule[2].clients:" in msg and "greater than or equal to 1" in msg
    assert "\n" not in msg


def test_validation_error_in_parallel_and_corpora(tmp_path):
    track = {
        "corpora": [{"name": "c", "documents": [{"source-file": "d.json", "document-count": -1}]}],
        "indices": [{"name": "i"}],
        "schedule": [
            {
                "parallel": {
                    "tasks": [
                        {"operation": {"operation-type": "sleep", "duration": 1}, "target-throughput": "fast"}
                    ]
                }
            }
        ],
    }
    write_track(tmp_path / "t", track)
    with pytest.raises(TrackError, match=r"schedule\[0\]\.parallel\.tasks\[0\]\.target-throughput"):
        load_track(tmp_path / "t", {})
    track["schedule"] = [{"operation": {"operation-type": "sleep", "duration": 1}}]
    write_track(tmp_path / "t", track)
    with pytest.raises(TrackError, match=r"corpora\[0\]\.documents\[0\]\.document-count"):
        load_track(tmp_path / "t", {})


def test_duplicate_task_names_are_rejected(tmp_path):
    t = _track_with_clients(1)
    t["challenges"][0]["schedule"][1]["name"] = "s"
    write_track(tmp_path / "t", t)
    with pytest.raises(
        TrackError, match=r"challenge 'c' has several tasks named s: give each task a unique 'name'"
    ):
        load_track(tmp_path / "t", {})


def test_completed_by_must_name_a_task(tmp_path):
    write_track(
        tmp_path / "t",
        {
            "schedule": [
                {
                    "parallel": {
                        "completed-by": "nope",
                        "tasks": [{"operation": {"operation-type": "sleep", "duration": 1}}],
                    }
                }
            ]
        },
    )
    with pytest.raises(TrackError, match=r"schedule\[0\]\.parallel.*completed-by 'nope'"):
        load_track(tmp_path / "t", {})


def test_missing_mandatory_operation_param(tmp_path):
    write_track(tmp_path / "t", {"schedule": [{"operation": {"operation-type": "bulk"}}]})
    with pytest.raises(TrackError, match="task 'bulk': operation 'bulk' .bulk. needs the parameter 'bulk-size'"):
        load_track(tmp_path / "t", {}, check_challenge=True)


def test_missing_index_body_file(tmp_path):
    write_track(
        tmp_path / "t",
        {"indices": [{"name": "i", "body": "nope.json"}], "schedule": [{"operation": "refresh"}]},
    )
    with pytest.raises(TrackError, match=r"indices\[0\]\.body refers to 'nope.json'"):
        load_track(tmp_path / "t", {})


def test_several_default_challenges(tmp_path):
    sched = [{"operation": "refresh"}]
    write_track(
        tmp_path / "t",
        {
            "challenges": [
                {"name": "a", "default": True, "schedule": sched},
                {"name": "b", "default": True, "schedule": sched},
            ]
        },
    )
    with pytest.raises(TrackError, match="several challenges are marked default"):
        load_track(tmp_path / "t", {})


def test_all_errors_are_bench_errors():
    assert issubclass(TrackError, BenchError)


# ---------------------------------------------------------------- shorthands and Jinja features


def test_schedule_shorthand_and_singular_challenge(tmp_path):
    write_track(tmp_path / "a", {"schedule": [{"operation": "refresh"}]})
    t = load_track(tmp_path / "a", {})
    assert [c.name for c in t.challenges] == ["default"] and t.challenge(None).default
    write_track(tmp_path / "b", {"challenge": {"name": "only", "schedule": [{"operation": "refresh"}]}})
    assert load_track(tmp_path / "b", {}).challenge(None).name == "only"


def test_include_collect_days_ago_tojson_and_set_visible_in_parts(tmp_path):
    track = """{% import "rally.helpers" as rally with context %}
{% set p_size = size | default(7) %}
{
  "description": {{ "quoted \\"desc\\"" | tojson }},
  "operations": [ {{ rally.collect(parts="ops/*.json") }} ],
  "schedule": [ {% include "sched.json" %} ]
}"""
    write_track(
        tmp_path / "t",
        track,
        {
            "ops/a.json": '{"name": "a-sleep", "operation-type": "sleep", "duration": {{ p_size }}}',
            "ops/b.json": '{"name": "b-search", "operation-type": "search", "index": "logs",'
            ' "days": {{ "15-05-1998" | days_ago(now) }}}',
            "sched.json": '{"operation": "a-sleep"}, {"operation": "b-search"}',
        },
    )
    t = load_track(tmp_path / "t", {"size": 3})
    assert t.description == 'quoted "desc"'
    ops = {x.name: x.operation for x in t.challenge(None).tasks()}
    assert ops["a-sleep"].params["duration"] == 3
    assert ops["b-search"].params["days"] > 9000
    with pytest.raises(TrackError, match="does not use the track parameter.*zzz.*it uses: size"):
        load_track(tmp_path / "t", {"zzz": 1})


def test_days_ago_filter_like_rally():
    assert days_ago("01-01-2020", "11-01-2020") == 10
    assert days_ago("15-05-1998", 895276800.0) == 1  # 1998-05-16T00:00:00Z
    assert days_ago("15-05-1998", 895276799.0) == 0


# ---------------------------------------------------------------- test mode


def test_test_mode_shrinks_the_track():
    t = load_track(GEONAMES, {}, test_mode=True)
    assert t.corpora[0].documents[0].document_count == 1000
    assert t.corpora[0].documents[0].uncompressed_bytes is None
    for ch in t.challenges:
        for task in ch.tasks():
            assert task.target_throughput is None and task.target_interval is None
            assert task.warmup_time_period in (None, 0)
            assert task.warmup_iterations in (None, 0)
            assert task.time_period is None or task.time_period <= 10
            assert task.iterations is None or task.iterations == 1  # per client, as in Rally
    par = t.challenge("index-and-query").schedule[0]
    assert {x.name: x.time_period for x in par.tasks}["term-while-indexing"] == 10
    full = load_track(GEONAMES, {})
    assert {x.name: x.iterations for x in full.challenge(None).tasks()}["term"] == 1000
    assert {x.name: x.iterations for x in t.challenge(None).tasks()}["term"] == 1


def test_ramp_up_must_fit_in_the_warmup_and_test_mode_drops_it(tmp_path):
    def track(warmup):
        return {"schedule": [{"operation": {"name": "h", "operation-type": "cluster-health"}, "clients": 10,
                              "ramp-up-time-period": 5, "time-period": 20, **warmup}]}
    with pytest.raises(TrackError, match=r"track\.json.*ramp-up-time-period \(5 s\) needs a warmup-time-period"):
        load_track(write_track(tmp_path / "a", track({"warmup-time-period": 4})), {})
    ok = load_track(write_track(tmp_path / "b", track({"warmup-time-period": 5})), {}).challenge(None).tasks()[0]
    assert [ok.start_delay(i) for i in (0, 1, 9)] == [0.0, 0.5, 4.5]
    quick = load_track(tmp_path / "b", {}, test_mode=True).challenge(None).tasks()[0]
    assert quick.warmup_time_period == 0 and quick.ramp_up_time_period is None and quick.start_delay(9) == 0.0


def test_unknown_generator_is_a_load_error(tmp_path):
    write_track(
        tmp_path / "t",
        {
            "indices": [{"name": "i"}],
            "corpora": [
                {
                    "name": "c",
                    "documents": [
                        {"source-file": "d.json", "document-count": 5, "generator": {"name": "geonames"}}
                    ],
                }
            ],
            "schedule": [{"operation": {"operation-type": "bulk", "bulk-size": 5}}],
        },
    )
    with pytest.raises(
        TrackError,
        match=r"corpora\[0\]\.documents\[0\]\.generator\.name: unknown generator "
        r"'geonames': use one of http_logs, nginx",
    ):
        load_track(tmp_path / "t", {})


def test_declared_but_unused_unsupported_operation_is_tolerated(tmp_path):
    # Rally tracks declare operations their challenges may not use; only a used one is an error.
    (tmp_path / "track.json").write_text(json.dumps({
        "version": 2,
        "operations": [{"name": "stats", "operation-type": "node-stats"},
                       {"name": "nap", "operation-type": "sleep", "duration": 0.01}],
        "schedule": [{"operation": "nap"}]}))
    track = load_track(tmp_path, {})
    assert [t.operation.name for t in track.challenges[0].tasks()] == ["nap"]


_UNDEF_TRACK = """{%% import "rally.helpers" as rally with context %%}
{
  "version": 2,
  "indices": [{"name": "%s"}],
  "operations": [
    {{ rally.collect(parts="operations/*.json") }}
  ],
  "schedule": [{"operation": "bulk"}]
}
"""
_BULK_OP = '{"name": "bulk", "operation-type": "search", "body": {"size": %s}}'


@pytest.mark.parametrize(
    "index, files, where",
    [
        # A string position renders as '' (Rally); an empty index name cannot work, so it is an error naming it.
        ("{{ y }}", {"operations/a.json": _BULK_OP % "1"},
         r"t/track.json: indices\[0\].name: String should have at least 1 character \(got ''\) \(the track leaves y "
         r"undefined, rendered as empty: pass --track-params=y:VALUE\)"),
        # A number position renders as invalid JSON: an error naming the variable, its file and line.
        ("i", {"operations/a.json": "{\"name\": \"c\", \"operation-type\": \"search\"}",
               "operations/b.json": '\n\n' + _BULK_OP % "{{ x }}"},
         r"t/track.json: undefined template variable\(s\) x \(operations/b.json:3\) render as empty \(as in Rally\), "
         r"which leaves invalid JSON \(line \d+ column \d+: invalid JSON: Expecting value; .*\); pass "
         r"--track-params=x:VALUE"),
        # A filter that needs a value fails as in Rally, at the file and line.
        ("i", {"operations/a.json": '{% include "inc/op.json" %}',
               "inc/op.json": '\n' + _BULK_OP % "{{ z | int }}"}, r"t/inc/op.json:2: .*'z' is undefined"),
    ],
)
def test_undefined_template_variable_that_cannot_work_is_named_with_file_and_line(tmp_path, index, files, where):
    write_track(tmp_path / "t", _UNDEF_TRACK % index, files)
    with pytest.raises(TrackError, match=where) as e:
        load_track(tmp_path / "t", {})
    assert "\n" not in str(e.value) and "--track-params" in str(e.value)


def test_undefined_variables_with_default_or_defined_checks_still_render(tmp_path):
    op = ('{"name": "bulk", "operation-type": "search", "body": {"size": {{ bs | default(7) }}}'
          '{% if extra is defined %}, "x": {{ extra | tojson }}{% endif %}'
          '{% if flag %}, "y": 1{% endif %}{{ rally.exists_set_param("z", nothere) }}}')
    write_track(tmp_path / "t", _UNDEF_TRACK % "{{ name | default('idx') }}", {"operations/a.json": op})
    track = load_track(tmp_path / "t", {})
    assert track.indices[0].name == "idx"
    assert track.challenges[0].tasks()[0].operation.params == {"body": {"size": 7}}
