"""Thresholds end to end, against the null sink with a known service time (``--delay-ms``): a threshold that holds
exits 0 and one that misses exits 99 with the measured value in every report format; abort-on-fail ends the race
early, stores it ``aborted-by-threshold`` with the samples it took, and its summary; ``--report-format=junit``
writes a JUnit XML that Jenkins' parser reads (checked as it reads it, below); a bad threshold is one line."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from bench.cli import main
from bench.results.exit_status import EXIT_BAD_INPUT, EXIT_OK, EXIT_THRESHOLD
from bench.trials.sqlite import TrialStore
from benchmarks.nullsink import free_port, start_in_background
from tests.race.test_race import only_trial, write_track

DELAY_MS = 5.0  # every answer of the sink waits this long: latency is at least it, whatever the machine's load


@pytest.fixture(scope="module")
def slow_sink():
    port = free_port()
    procs = start_in_background(port, delay=DELAY_MS / 1000.0)
    yield f"127.0.0.1:{port}"
    for p in procs:
        p.terminate()
        p.join(10)


def _track(root: Path, iterations: int = 150, **extra) -> Path:
    search = {"operation-type": "search", "index": "logs", "body": {"query": {"match_all": {}}}}
    track = write_track(root, [{"operation": {"name": "q", **search}, "clients": 2, "iterations": iterations},
                               {"operation": {"name": "q2", **search}, "clients": 1, "iterations": 20}],
                        indices=[{"name": "logs"}])
    if extra:
        raw = json.loads((track / "track.json").read_text())
        (track / "track.json").write_text(json.dumps({**raw, **extra}))
    return track


def _race(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    rc = main(["--quiet", "race", *args])
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_a_threshold_that_holds_exits_0_and_one_that_misses_exits_99_with_the_measured_value(
        tmp_path: Path, slow_sink: str, capsys: pytest.CaptureFixture[str]) -> None:
    track = _track(tmp_path / "t", thresholds={"q": ["p(50)<5000", {"threshold": "error_rate<1%"}]})
    rc, out, err = _race(capsys, f"--track-path={track}", f"--target-hosts={slow_sink}", "--report-format=json",
                         "--threshold", "*:p(90)<10s", "--threshold", "q:mean_throughput>1")
    assert rc == EXIT_OK, err
    verdicts = {(r["threshold"], r["task"]): r for r in json.loads(out)["thresholds"]}
    assert {k: v["result"] for k, v in verdicts.items()} == {
        ("*:p(90)<10s", "q"): "passed", ("*:p(90)<10s", "q2"): "passed",
        ("q:mean_throughput>1", "q"): "passed", ("q:p(50)<5000", "q"): "passed", ("q:error_rate<1%", "q"): "passed"}
    # the measured value is the summary's own: p90 latency of q as its row says, above the sink's delay
    rows = {(r["metric"], r["task"]): r["value"] for r in json.loads(out)["rows"]}
    assert verdicts[("*:p(90)<10s", "q")]["value"] == rows[("90th percentile latency", "q")] >= DELAY_MS

    # the same race, a limit below the sink's delay: it cannot hold
    rc, out, err = _race(capsys, f"--track-path={track}", f"--target-hosts={slow_sink}", "--report-format=csv",
                         "--threshold", f"q:p50_latency<{DELAY_MS / 2:g}ms")
    assert rc == EXIT_THRESHOLD, err
    assert "threshold failed: q:p50_latency<2.5ms: failed, measured" in err and err.count("error:") == 1
    [row] = [r for r in out.splitlines() if r.startswith("threshold q:p50_latency")]
    name, task, value, unit, _ = row.split(",")
    assert (name, task, unit) == ("threshold q:p50_latency<2.5ms: failed", "q", "ms") and float(value) >= DELAY_MS
    with TrialStore() as store:
        trials = store.list_trials()
        assert [t.status for t in trials] == ["complete", "complete"]
        # bench show prints the stored verdicts too (table format)
    assert main(["--quiet", "show", trials[0].id[:12]]) == 0
    shown = capsys.readouterr().out
    assert "Thresholds: 2 of 3 passed" in shown and "FAILED" in shown, shown  # the track's own two passed


def test_abort_on_fail_stops_the_race_and_keeps_what_it_measured(tmp_path: Path, slow_sink: str,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    # q's 2 clients would send 2 x 2,000 requests (>= 20 s at 5 ms each); p(90) is judged from its 10th request on
    track = _track(tmp_path / "t", iterations=2000)
    rc, out, err = _race(capsys, f"--track-path={track}", f"--target-hosts={slow_sink}",
                         "--report-format=junit", "--threshold", "q:p90_latency<1ms,abort-on-fail")
    assert rc == EXIT_THRESHOLD, err
    assert "stopped by a threshold: q:p90_latency<1ms failed on task 'q'" in err
    with TrialStore() as store:
        trial = only_trial(store)
        samples = store.samples(trial.id)
        summary = store.summary(trial.id)
    assert trial.status == "aborted-by-threshold" and "stopped by a threshold" in (trial.error or "")
    counts = samples["task"].value_counts().to_dict()
    # stopped early: q did not send its 4,000, q2 never ran; every request it sent is stored
    assert 10 <= counts["q"] < 4000 and "q2" not in counts, counts
    assert summary is not None and summary.task("q") is not None and summary.task("q").requests == counts["q"]
    suite = _jenkins_read(out)
    assert suite["properties"]["status"] == "aborted-by-threshold"
    assert suite["cases"]["q:p90_latency<1ms"][0] == "failure"
    assert "stopped the race" in suite["cases"]["q:p90_latency<1ms"][1]


def test_junit_xml_reads_as_jenkins_reads_it_with_a_failure_an_error_and_a_pass(
        tmp_path: Path, slow_sink: str, capsys: pytest.CaptureFixture[str]) -> None:
    track = _track(tmp_path / "t")
    report = tmp_path / "junit.xml"
    rc, out, err = _race(capsys, f"--track-path={track}", f"--target-hosts={slow_sink}", "--report-format=junit",
                         f"--report-file={report}", "--threshold", "q:p99_latency<1ms",
                         "--threshold", "q2:p(99.9)<10s", "--threshold", "q:error_rate<=0")
    assert rc == EXIT_THRESHOLD, err
    assert _timeless(out) == _timeless(report.read_text())  # the file is what stdout got (written a moment before)
    suite = _jenkins_read(out)
    cases = suite["cases"]
    assert cases["race"] == ("pass", "")
    assert cases["q:p99_latency<1ms"][0] == "failure" and " ms" in cases["q:p99_latency<1ms"][1]
    # q2 sent 20 requests: a p99.9 needs 1,000 -- not evaluated, an error, never a pass
    assert cases["q2:p(99.9)<10s"] == ("error", "q2:p(99.9)<10s: not evaluated: task 'q2' measured 20 requests; "
                                                "p(99.9) needs at least 1,000")
    assert cases["q:error_rate<=0"][0] == "pass"
    assert suite["counts"] == {"tests": "4", "failures": "1", "errors": "1"}


def _timeless(xml: str) -> str:
    return re.sub(r' time="[0-9.]+"', "", xml)


def _jenkins_read(xml: str) -> dict:
    """The report as Jenkins' JUnit plugin reads it (hudson.tasks.junit SuiteResult/CaseResult): testsuite elements
    under the root, each counted only if it has a testcase; a case's ``name`` (required), ``classname``, ``time`` (a
    number); ``error`` before ``failure``, whose ``message`` attribute is the one-line detail; ``skipped``. Also
    what the xunit plugin's junit-10.xsd requires of a testsuite (name, tests, failures, errors; time a decimal)."""
    root = ET.fromstring(xml)
    assert root.tag == "testsuites"
    [suite] = [s for s in root.findall("testsuite") if s.find("testcase") is not None]
    for attr in ("name", "tests", "failures", "errors"):
        assert suite.get(attr) is not None, attr
    float(suite.get("time", "0"))
    allowed = {"testsuite", "properties", "testcase", "system-out", "system-err"}
    assert {c.tag for c in suite} <= allowed
    cases = {}
    for case in suite.findall("testcase"):
        assert case.get("name") and case.get("classname")
        float(case.get("time", "0"))
        assert {c.tag for c in case} <= {"skipped", "error", "failure", "system-out", "system-err"}
        bad = case.find("error") if case.find("error") is not None else case.find("failure")
        cases[case.get("name")] = ("pass", "") if bad is None else (bad.tag, bad.get("message", ""))
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert len(cases) == int(suite.get("tests", "0"))
    return {"cases": cases, "properties": props,
            "counts": {k: suite.get(k) for k in ("tests", "failures", "errors")}}


@pytest.mark.parametrize("threshold, words", [
    ("q:p99_latency", "not METRIC OP LIMIT"),
    ("nosuch:p99_latency<1s", "'nosuch' is no task of the challenge (tasks: q, q2)"),
    ("q:p99_latnecy<1s", "unknown metric 'p99_latnecy'"),
    ("q:error_rate<150%", "a rate is between 0 and 1"),
    ("q:p99_latency<1parsec", "unknown time unit 'parsec'"),
    ("q:mean_throughput>5,abort-on-fail", "abort-on-fail needs a metric known while the race runs"),
    ("ccr:lag_p42<5s", "scope 'ccr' has no metric 'lag_p42'"),
    ("p99_latency<1s", "write SCOPE:METRIC<LIMIT"),
])
def test_a_bad_threshold_is_one_line_before_anything_starts(tmp_path: Path, threshold: str, words: str,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    track = _track(tmp_path / "t")
    rc, _, err = _race(capsys, f"--track-path={track}", "--target-hosts=127.0.0.1:1", "--threshold", threshold)
    assert rc == EXIT_BAD_INPUT and err.count("\n") == 1 and words in err and "Traceback" not in err, err
    with TrialStore() as store:
        assert store.list_trials() == []


def test_a_bad_threshold_in_the_track_file_names_the_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    track = _track(tmp_path / "t", thresholds={"q": [{"threshold": "p(99)<1s", "abortOnFail": "yes"}]})
    rc, _, err = _race(capsys, f"--track-path={track}", "--target-hosts=127.0.0.1:1")
    assert rc == EXIT_BAD_INPUT and err.count("\n") == 1, err
    assert "t/track.json thresholds['q'][0]: abortOnFail='yes': use true or false" in err
