"""benchmarks/rally_census.py's outcome of each run (the census itself runs for an hour against a real cluster and
stays out of the suite): what counts as completing, as the cluster's lack, as bench's failure, as a hang."""

from __future__ import annotations

import importlib.util
import sys

import pytest

from bench.driver.missing_feature import LACKS, SEPARATOR, explain
from tests.support.checkout import ROOT

SCALED = explain("HTTP 400: mapper_parsing_exception: No handler for type [scaled_float] declared on field [p]")


@pytest.fixture(scope="module")
def census():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    path = ROOT / "benchmarks" / "rally_census.py"
    spec = importlib.util.spec_from_file_location("rally_census", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop(spec.name, None)
    sys.path.remove(str(ROOT / "benchmarks"))


def test_the_census_reads_bench_own_wording(census):
    assert (census.LACKS, census.SEPARATOR) == (LACKS, SEPARATOR)


def test_outcomes(census):
    Run = census.Run
    ok = dict(trial="t1", status="complete", exit_code=0)
    assert census.classify(Run("a", **ok)) == ("completes cleanly", [])
    # every failure named, or following from a named one (the index that could not be created)
    named = Run("b", **ok, failures=[("create-index", SCALED, 1),
                                      ("search", "HTTP 404: index_not_found_exception: no such index [x]", 5)])
    assert census.classify(named) == ("completes, causes named", [
        "the field type scaled_float: needs the mapper-extras module (in the engine's default distribution, not in "
        "a minimal (integ-test) build)"])
    # the same 404 without a named cause before it is bench's to explain
    alone = Run("c", **ok, failures=[("search", "HTTP 404: index_not_found_exception: no such index [x]", 5)])
    outcome, causes = census.classify(alone)
    assert outcome == "completes, causes unnamed" and causes == [
        "search: HTTP 404: index_not_found_exception: no such index [x]"]
    failed = Run("d", trial="t2", status="failed", error=f"task 'create' (create-index) failed: {SCALED}")
    assert census.classify(failed)[0] == "fails: cluster lacks"
    assert census.classify(Run("e", trial="t3", status="failed", error="load driver worker died"))[0] == \
        "fails in bench"
    assert census.classify(Run("f", crashed=True, last_line="KeyError: 'x'"))[0] == "fails in bench"
    missing = Run("m", trial="t5", status="failed", error="task 's': parameter source 'p' failed to start: "
                  "FileNotFoundError: [Errno 2] No such file or directory: '/nowhere/cohere/queries.json'")
    missing.track = "cohere"
    assert census.classify(missing) == ("fails: file missing from the checkout",
                                        ["/nowhere/cohere/queries.json is not in the checkout"])
    dns = Run("n", trial="t6", status="failed", error="track processor X.on_prepare_track failed: "
              "ClientConnectorDNSError: Cannot connect to host rally-tracks.elastic.co:443 ssl:default")
    assert census.classify(dns)[0] == "fails: download unreachable here"
    asserted = Run("o", **ok, failures=[("term", "Expected [hits] in [term] to be == [10000] but was [0].", 1)])
    assert census.classify(asserted) == ("completes, causes named", [census.ASSERTION])
    refused = Run("g", exit_code=2, last_line="/x/track.json: the track needs pytrec_eval==0.5, not installed")
    assert census.classify(refused)[0] == "does not load"
    offline = Run("i", exit_code=2, last_line="/x/track.json: installing the track's dependencies pytrec_eval==0.5 "
                  "failed (exit code 1) because a download could not be reached (Name or service not known): see log")
    assert census.classify(offline) == ("fails: download unreachable here",
                                        ["a download this machine cannot reach (Name or service not known)"])
    hung = Run("h", timed_out=True, seconds=240.4, trial="t4", status="interrupted",
               failures=[("create-index", SCALED, 1)])
    outcome, causes = census.classify(hung)
    assert outcome == "hangs" and causes[0] == "still running after 240 s" and "scaled_float" in causes[1]


def test_table_counts_what_ran_to_the_end(census):
    rows = [
        {"track": "a", "challenge": "c", "outcome": "completes cleanly", "requests": 10, "failed": 0, "seconds": 20,
         "causes": []},
        {"track": "b", "challenge": "c", "outcome": "completes, causes named", "requests": 10, "failed": 2,
         "seconds": 30, "causes": ["the field type scaled_float: needs x"]},
        {"track": "c", "challenge": "c", "outcome": "hangs", "requests": 1, "failed": 1, "seconds": 240,
         "causes": ["still running after 240 s"]},
    ]
    text = census.markdown(rows, "opensearch 3.6.0")
    assert "**2 of 3 run to the end** (1 without a failed request); 1 completes cleanly, 1 completes, causes " \
           "named, 1 hangs." in text
    assert "- the field type scaled_float: needs x: 1" in text
    assert "| b | c | completes, causes named | 10 (2) | 30 | the field type scaled_float: needs x |" in text


def test_osb_workloads_run_as_osb_users_name_them(census, tmp_path):
    # a workload.json folder is raced with --workload-path, a track.json one (even beside a workload.json) with
    # --track-path, and the table of a workloads tree speaks OSB's words
    (tmp_path / "w").mkdir()
    (tmp_path / "w" / "workload.json").write_text("{}")
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "track.json").write_text("{}")
    (tmp_path / "both").mkdir()
    for name in ("track.json", "workload.json"):
        (tmp_path / "both" / name).write_text("{}")
    assert [census.path_flag(tmp_path / d) for d in ("w", "t", "both")] == [
        "--workload-path", "--track-path", "--track-path"]
    rows = [{"track": "nested", "challenge": "nested-search-test-procedure", "outcome": "completes cleanly",
             "requests": 28, "failed": 0, "seconds": 4, "causes": []}]
    text = census.markdown(rows, "opensearch 3.6.0", osb=True)
    assert "| workload | test procedure | outcome |" in text and "| track |" not in text
    refused = census.Run("v", exit_code=2, last_line="/x/workload.json: corpora[0].documents[0].source-format: ...")
    assert census.classify(refused)[0] == "does not load"
