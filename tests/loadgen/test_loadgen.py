"""INFINI Loadgen compatibility: template variables, YAML configs, and `bench loadgen` against a real cluster.

The YAML fixtures in tests/data/loadgen are taken from Loadgen's documentation (see the README there)."""

from __future__ import annotations

import gzip
import io
import json
import re
import shutil
import time
import urllib.request
from collections import Counter
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from types import SimpleNamespace

import pytest
from rich.console import Console

from bench.cli import main
from bench.driver.progress import Progress
from bench.driver.samples import RequestSample
from bench.loadgen.config import load_plan
from bench.loadgen.summary import human_bytes
from bench.loadgen.template import RequestTemplate, substitute_env
from bench.loadgen.variables import NOT_FOUND, Variables, VariableSpec, go_layout, go_time_string
from bench.trials.sqlite import TrialStore
from bench.util.errors import ConfigError

DATA = Path(__file__).parents[1] / "data" / "loadgen"
XID = re.compile(r"^[0-9a-v]{20}$")
GO_STRING = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d{1,9})? [+-]\d{4} \S+$")


def _vars(*specs: dict, base_dir: Path = DATA) -> Variables:
    return Variables([VariableSpec.model_validate(s) for s in specs], base_dir=base_dir, seed=7)


# ------------------------------------------------------------------ variables


def test_go_layouts_convert_like_go():
    d = datetime(2024, 3, 5, 7, 8, 9, 123456, tzinfo=timezone(timedelta(hours=8)))
    assert go_layout("2006-01-02T15:04:05-0700")(d) == "2024-03-05T07:08:09+0800"
    assert go_layout("2006-01-02T15:04:05.000Z07:00")(d) == "2024-03-05T07:08:09.123+08:00"
    assert go_layout("Mon Jan _2 03:04:05PM MST 06")(d) == "Tue Mar  5 07:08:09AM UTC+08:00 24"
    assert go_layout("02/Jan/2006:15:04:05 -0700")(d) == "05/Mar/2024:07:08:09 +0800"
    assert go_layout("2006-01-02 15:04:05.999999")(d.replace(microsecond=120000)) == "2024-03-05 07:08:09.12"
    assert go_layout("January 2, 2006 3:04 pm")(d.replace(hour=19)) == "March 5, 2024 7:08 pm"
    utc = datetime(2024, 3, 5, 7, 8, 9, 500000, tzinfo=UTC)
    assert go_layout("2006-01-02T15:04:05Z07:00")(utc) == "2024-03-05T07:08:09Z"
    assert go_time_string(utc) == "2024-03-05 07:08:09.5 +0000 UTC"


def test_sequence_counts_from_from_and_wraps_to_zero_after_to():
    v = _vars({"name": "s", "type": "sequence", "from": 5, "to": 8}, {"name": "plain", "type": "sequence64"})
    assert v.column("s", 6) == [6, 7, 8, 0, 1, 2]
    assert v.column("plain", 3) == [1, 2, 3] and v.column("plain", 2) == [4, 5]
    state = v.sequence_state()
    w = _vars({"name": "plain", "type": "sequence64"})
    w.restore_sequences(state)
    assert w.value("plain") == 6


def test_picks_ranges_arrays_replace_and_unknown_names():
    v = _vars({"name": "ip", "type": "file", "path": "dict/ip.txt", "data": ["9.9.9.9"]},
              {"name": "l", "type": "list", "data": ["a", "b"]},
              {"name": "r", "type": "range", "from": 10, "to": 12},
              {"name": "arr", "type": "random_array", "variable_key": "r", "size": 3, "square_bracket": True},
              {"name": "sarr", "type": "random_array", "variable_key": "l", "variable_type": "string", "size": 2},
              {"name": "q", "type": "list", "data": ['say "hi"'], "replace": {'"': "'"}},
              {"name": "u", "type": "uuid"})
    ips = set(v.column("ip", 400))
    assert ips == set((DATA / "dict" / "ip.txt").read_text().split()) | {"9.9.9.9"}
    assert set(v.column("l", 200)) == {"a", "b"}
    assert set(v.column("r", 300)) == {10, 11, 12}
    arr = json.loads(v.value("arr"))
    assert len(arr) == 3 and set(arr) <= {10, 11, 12}
    assert re.fullmatch(r'"[ab]","[ab]"', v.value("sarr"))
    assert v.value("q") == "say 'hi'"
    ids = v.column("u", 5000) + v.column("u", 5000)
    assert len(set(ids)) == 10_000 and all(XID.match(i) for i in ids)
    assert v.value("nope") == NOT_FOUND


@pytest.mark.parametrize("spec, fragment", [
    ({"name": "x", "type": "bogus"}, "unsupported variable type 'bogus'"),
    ({"name": "x", "type": "file", "path": "missing.txt"}, "missing.txt not found"),
    ({"name": "x", "type": "range", "from": 5, "to": 1}, "from <= to"),
    ({"name": "x", "type": "now_with_format"}, "needs 'format'"),
    ({"name": "x", "type": "random_array", "variable_key": "y", "size": 2}, "names no variable"),
])
def test_bad_variables_are_one_line_errors(spec, fragment):
    with pytest.raises(ConfigError, match=re.escape(fragment)) as e:
        _vars(spec)
    assert "\n" not in str(e.value)


def test_runtime_and_line_variables_share_values_and_other_occurrences_are_fresh():
    v = _vars({"name": "id", "type": "sequence"}, {"name": "uuid", "type": "uuid"},
              {"name": "now_unix", "type": "now_unix"})
    body = ('{"index":{"_id":"$[[uuid]]","routing":"$[[r]]"}}\n'
            '{"id":"$[[uuid]]","r":"$[[r]]","b":$[[batch]],"t":$[[now_unix]],"x":"$[[ip]]","brace":"{}"}\n')
    t = RequestTemplate(method="post", url="/_bulk", body=body, headers={"X-Batch": "$[[batch]]"}, repeat=25,
                        runtime={"batch": "id"}, line={"r": "uuid"}, variables=v, where="t")
    assert t.unknown == ["ip"] and t.docs_per_repeat == 1
    for expected_batch in (1, 2):
        r = t.render()
        lines = r.body.decode().splitlines()
        assert r.docs == 25 and len(lines) == 50 and r.method == "POST"
        actions, docs = [json.loads(x) for x in lines[::2]], [json.loads(x) for x in lines[1::2]]
        assert {d["b"] for d in docs} == {expected_batch} and r.headers == {"X-Batch": str(expected_batch)}
        for a, d in zip(actions, docs):
            assert a["index"]["routing"] == d["r"]  # one value per repetition
            assert a["index"]["_id"] != d["id"]  # every other occurrence draws anew
            assert d["x"] == NOT_FOUND and d["brace"] == "{}"
        assert len({d["r"] for d in docs}) == 25


def test_env_substitution_and_missing_env():
    assert substitute_env("$[[env.A]]/x/$[[id]]", {"A": "http://h:1"}, where="w") == "http://h:1/x/$[[id]]"
    with pytest.raises(ConfigError, match=r"w: \$\[\[env.B\]\] is not set"):
        substitute_env("$[[env.B]]", {}, where="w")


def test_plan_of_the_documentation_example(tmp_path):
    plan = load_plan(DATA / "loadgen-docs-all-variables.yml", environ={"ES_ENDPOINT": "http://127.0.0.1:1"})
    assert plan.endpoints() == ["http://127.0.0.1:1"]
    bulk, search = plan.requests
    assert bulk.template.repeat == 100 and bulk.template.headers["Authorization"].fmt.startswith("Basic ")
    assert search.label == "GET /loadgen-docs/_search"
    bad = tmp_path / "bad.yml"
    bad.write_text("requests:\n  - request:\n      method: GET\n    url: [\n")
    with pytest.raises(ConfigError, match=r"bad.yml: line \d+, column \d+: not valid YAML"):
        load_plan(bad)
    bad.write_text("requests:\n  - request:\n      method: GET\n")
    with pytest.raises(ConfigError, match=r"bad.yml: field 'requests.0.request.url': Field required"):
        load_plan(bad)


def test_assert_conditions_like_infini():
    from bench.loadgen.conditions import Response, compile_condition

    body = json.dumps({"took": 17, "timed_out": False, "result": "created",
                       "hits": {"total": {"value": 100}, "hits": [{"_id": "a1"}]}}).encode()
    ok, missing = Response(200, body), Response(201, b"not json")

    def check(spec, r=ok):
        return compile_condition(spec, "t.yml: requests[0].assert")(r)

    assert check({"equals": {"_ctx.response.status": 200, "_ctx.response.body_json.timed_out": False}})
    assert not check({"equals": {"_ctx.response.status": 201}})
    assert check({"equals": {"_ctx.response.body_json.hits.total.value": "100"}})  # as YAML often writes it
    assert check({"range": {"_ctx.response.body_json.took": {"gte": 17, "lt": 50}}})
    assert not check({"range": {"_ctx.response.body_json.took": {"gt": 17}}})
    assert check({"and": [{"prefix": {"_ctx.response.body_json.result": "cre"}},
                          {"suffix": {"_ctx.response.body": "}}"}},
                          {"contains": {"_ctx.response.body": '"_id": "a1"'}},
                          {"regexp": {"_ctx.response.body_json.hits.hits.0._id": "^a[0-9]$"}},
                          {"in": {"_ctx.response.status": [200, 201]}},
                          {"exists": ["_ctx.response.body_json.hits.total"]}]})
    assert check({"or": [{"equals": {"_ctx.response.status": 500}}, {"not": {"exists": "_ctx.response.body_json.x"}}]})
    # Fields a response does not have never match (and a body that is not JSON has no body_json).
    assert not check({"equals": {"_ctx.response.body_json.result": "created"}}, missing)
    assert not check({"range": {"_ctx.response.body_json.took": {"lt": 50}}}, missing)
    assert check({"equals": {"_ctx.response.body_length": 8}}, missing)
    for spec, fragment in [({"equals": {"_ctx.request.url": "x"}}, "field '_ctx.request.url' is not supported"),
                           ({"near": {"_ctx.response.status": 1}}, "unknown condition 'near'"),
                           ({"range": {"_ctx.response.status": {"above": 1}}}, "gt, gte, lt, lte"),
                           ({"regexp": {"_ctx.response.body": "("}}, "bad regular expression"),
                           ({"and": {}}, "expected a list of conditions")]:
        with pytest.raises(ConfigError, match=re.escape(fragment)) as e:
            compile_condition(spec, "t.yml: requests[0].assert")
        assert str(e.value).startswith("t.yml: requests[0].assert")


def test_register_and_sleep_are_said_to_be_unevaluated(tmp_path):
    config = tmp_path / "c.yml"
    config.write_text("requests:\n  - request: {method: GET, url: 'http://127.0.0.1:1/'}\n"
                      "    register: [{v: _ctx.response.body_json.x}]\n  - sleep: {sleep_in_milli_seconds: 5}\n")
    warnings = load_plan(config).warnings
    assert any("requests[0]: 'register' is not evaluated" in w for w in warnings)
    assert any("requests[1]: 'sleep' is not evaluated" in w for w in warnings)


# ------------------------------------------------------------------ against a real cluster


def _get(base: str, path: str) -> dict:
    with urllib.request.urlopen(base + path, timeout=60) as r:
        return json.loads(r.read())


def _loadgen(*args: str) -> int:
    return main(["--quiet", "loadgen", *args])


@pytest.mark.cluster
def test_gateway_documentation_example_runs_unchanged(tmp_path, es_target, es_cluster, capsys):
    """The docs' runtime-variables example, byte for byte: its URL points elsewhere, so --target-hosts."""
    base = es_cluster.hosts[0]
    config = tmp_path / "loadgen.yml"
    shutil.copy(DATA / "gateway-docs-runtime-variables.yml", config)
    assert _loadgen("--config", str(config), "-c", "3", "-d", "20", "-l", "12", f"--target-hosts={es_target}") == 0
    out = capsys.readouterr().out
    assert "[Loadgen Client Metrics]" in out and "Status 200:" in out
    assert re.search(r"Number of Errors:\s+0\n", out) and re.search(r"Number of Invalid:\s+0\n", out)
    assert "[warmup] status: 200" in out and "compatible-with=7" in out
    urllib.request.urlopen(urllib.request.Request(base + "/test-*/_refresh", method="POST"), timeout=60).read()
    hits = _get(base, "/test-*/_search?size=1000&seq_no_primary_term=false")["hits"]["hits"]
    assert len(hits) == 130  # warmup (1 request) + the 12-request limit, 10 documents each
    assert {h["_index"] for h in hits} <= {f"test-{i}" for i in range(10, 16)}
    batches = Counter(h["_source"]["batch_number"] for h in hits)
    assert sorted(map(int, batches)) == list(range(1, 14))  # the workers continue the warmup's sequence
    assert set(batches.values()) == {10}  # runtime_variables: one batch number per request
    for h in hits:
        s = h["_source"]
        assert XID.match(h["_id"]) and XID.match(s["id"]) and s["id"] != h["_id"]
        assert s["routing_no"] == h["_routing"]  # runtime_body_line_variables: shared within the document
        assert s["ip"] == "not_found"  # $[[ip]] is not defined in that example: Loadgen's behaviour
        assert 10 <= int(s["random_no"]) <= 15
        assert GO_STRING.match(s["now_local"]) and re.fullmatch(r"\d{10}", s["now_unix"])
    assert len({h["_id"] for h in hits}) == 130
    with TrialStore() as store:
        trial = store.list_trials(1)[0]
        assert (trial.track, trial.challenge, trial.status) == ("loadgen", "loadgen.yml", "complete")
        df = store.samples(trial.id)
    assert len(df) == 12 and set(df["status"]) == {200} and (df["bytes_received"] > 0).all()


@pytest.mark.cluster
def test_every_variable_type_lands_as_specified(tmp_path, es_cluster, monkeypatch, capsys):
    base = es_cluster.hosts[0]
    config = tmp_path / "loadgen.yml"
    shutil.copy(DATA / "loadgen-docs-all-variables.yml", config)
    shutil.copytree(DATA / "dict", tmp_path / "dict")
    monkeypatch.setenv("ES_ENDPOINT", base)  # Loadgen: the environment overrides the config's env defaults
    assert _loadgen("--config", str(config), "-c", "2", "-d", "20", "-l", "4", "--compress") == 0
    out = capsys.readouterr().out
    assert re.search(r"Number of Invalid:\s+0\n", out) and re.search(r"Status 200:\s+4\n", out)
    urllib.request.urlopen(urllib.request.Request(base + "/loadgen-docs/_refresh", method="POST"), timeout=60).read()
    docs = [h["_source"] for h in _get(base, "/loadgen-docs/_search?size=1000")["hits"]["hits"]]
    assert len(docs) == 300  # bulk requests: 1 in the warmup + 2 of the 4 (requests alternate) x 100 lines
    ips = set((DATA / "dict" / "ip.txt").read_text().split())
    now = datetime.now(UTC)
    for d in docs:
        assert d["ip"] in ips and d["user"] in {"medcl", "abc", "efg", "xyz"} and d["bool"] in (0, 1)
        assert 10 <= d["suffix"] <= 1000 and len(d["ids"]) == 10 and all(10 <= i <= 1000 for i in d["ids"])
        assert re.fullmatch(r"\{(\d+,){9}\d+\}", d["str_list"])  # square brackets replaced by braces
        assert GO_STRING.match(d["now_local"]) and d["now_utc"].endswith("+0000 UTC")
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}", d["now_utc_lite"])
        stamp = datetime.strptime(d["now_with_format"], "%Y-%m-%dT%H:%M:%S%z")
        assert abs((now - stamp).total_seconds()) < 600 and abs(int(d["now_unix"]) - now.timestamp()) < 600
    assert sorted(int(d["id"]) for d in docs) == list(range(1, 301))  # sequence: unique, continuing the warmup's
    assert sorted(int(d["id64"]) for d in docs) == list(range(1, 301))
    by_batch = Counter(d["batch"] for d in docs)
    assert len(by_batch) == 3 and set(by_batch.values()) == {100}
    assert all(len({d["routing"] for d in docs if d["batch"] == b}) == 100 for b in by_batch)


@pytest.mark.cluster
def test_assert_failures_are_counted_as_invalid_and_stop_the_warmup(tmp_path, es_target, capsys):
    # Two requests alternate: one whose assert holds, one whose assert never does (no cluster is purple).
    config = tmp_path / "assert.yml"
    config.write_text(f"""runner:
  no_warm: true
requests:
  - request:
      method: GET
      url: http://{es_target}/_cluster/health
    assert:
      and:
        - equals: {{_ctx.response.status: 200}}
        - exists: [_ctx.response.body_json.cluster_name]
        - range: {{_ctx.response.body_json.number_of_nodes: {{gte: 1}}}}
  - request:
      method: GET
      url: http://{es_target}/_cluster/health
    assert:
      equals: {{_ctx.response.body_json.status: purple}}
""")
    # 12 requests over 2 clients: each client sends requests 0, 1, 0, 1, 0, 1.
    assert _loadgen("--config", str(config), "-c", "2", "-d", "20", "-l", "12") == 0
    out = capsys.readouterr().out
    assert re.search(r"Number of Errors:\s+0\n", out) and re.search(r"Number of Invalid:\s+6\n", out), out
    assert re.search(r"Status 200:\s+12\n", out)
    with TrialStore() as store:
        df = store.samples(store.list_trials(1)[0].id)
    assert (df.loc[~df["success"], "error_type"] == "assert-failed").sum() == 6 and (~df["success"]).sum() == 6
    # With the warmup on, a failing assert ends the run before measuring, in one line.
    config.write_text(config.read_text().replace("no_warm: true", "no_warm: false"))
    assert _loadgen("--config", str(config), "-d", "2") != 0
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: warmup request #1 (GET http://") and "failed its assert" in err and "\n" not in err


@pytest.mark.cluster
def test_failing_warmup_is_one_line_and_bad_flags(tmp_path, es_target, capsys):
    config = tmp_path / "bad.yml"
    config.write_text("requests:\n  - request:\n      method: GET\n      url: http://x/no-such-index/_search\n")
    assert _loadgen("--config", str(config), "-d", "2", f"--target-hosts={es_target}") != 0
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: warmup request #0 (GET http://") and "HTTP 404" in err and "\n" not in err
    assert _loadgen("--config", str(config), "-c", "0") != 0
    assert capsys.readouterr().err.strip() == "error: -c: Input should be greater than or equal to 1"
    assert _loadgen("--config", str(tmp_path / "missing.yml")) != 0
    assert "missing.yml not found" in capsys.readouterr().err


@pytest.mark.cluster
def test_compressed_bodies_count_their_gzipped_size_as_sent(tmp_path, es_target, capsys):
    # Constant bodies, so the bytes that went on the wire are known: gzip (level 1, as sent) of the rendered
    # body. Before, the samples and "Request Traffic" counted the raw body (~30x more for this bulk).
    config = tmp_path / "gz.yml"
    config.write_text(f"""runner:
  no_warm: true
requests:
  - request:
      method: POST
      url: http://{es_target}/loadgen-gzip/_bulk
      body_repeat_times: 200
      body: |
        {{"index": {{"_index": "loadgen-gzip"}}}}
        {{"message": "GET /images/logo.png HTTP/1.1 200 5120 - Mozilla/5.0 (X11; Linux x86_64)", "status": 200}}
  - request:
      method: POST
      url: http://{es_target}/loadgen-gzip/_search
      body: '{{"query": {{"match": {{"message": "logo logo logo logo logo logo logo logo logo logo"}}}}}}'
""")
    bulk, search = (r.template.render().body for r in load_plan(config).requests)
    wire = {"docs": len(gzip.compress(bulk, compresslevel=1)), "ops": len(gzip.compress(search, compresslevel=1))}
    assert wire["docs"] * 10 < len(bulk)
    assert _loadgen("--config", str(config), "-c", "1", "-d", "20", "-l", "4", "--compress") == 0
    out = capsys.readouterr().out
    with TrialStore() as store:
        df = store.samples(store.list_trials(1)[0].id)
    assert len(df) == 4 and df["success"].all()
    assert list(df["bytes_sent"]) == [wire[u] for u in df["unit"]]
    assert f"{human_bytes(2 * wire['docs'] + 2 * wire['ops'])} sent" in out


def test_progress_counts_searches_as_requests_and_only_bulk_work_as_docs():
    out = io.StringIO()
    progress = Progress(Console(file=out, force_terminal=False, width=200))
    progress.step_started([SimpleNamespace(name="mixed", time_period=None, warmup_time_period=None)])
    now = time.time()
    progress._tasks["mixed"].window.started = now - 5  # the step began 5 s ago; both answers came 2 s ago
    due = float(int(now)) - 2.5
    progress.samples([RequestSample("mixed", "mixed", "loadgen", 0, due, 0.1, 0.1, 0.1, 200, "docs", 10, True,
                                    None, False, 0),
                      RequestSample("mixed", "mixed", "loadgen", 0, due + 0.1, 0.2, 0.1, 0.1, 1, "ops", 10, True,
                                    None, False, 0)])
    # Over the last 2 settled seconds: 200 docs and one search (before: one rate of 201 units named after the last
    # sample).
    assert progress._tasks["mixed"].rate(now).startswith("100 docs/s, ")
    progress.step_ended()
    line = out.getvalue().strip()
    assert "mixed: 2 requests, 200 docs in " in line, line  # before: "2 requests, 201 ops"
