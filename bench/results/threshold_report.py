"""The thresholds' verdicts in every report format: a table under the headline (table, markdown), rows (csv),
records (json) and a JUnit XML document for CI (one testsuite per race, one testcase per threshold). Pure."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

from tabulate import tabulate

from bench.results.summary import Summary
from bench.results.thresholds import ThresholdResult, aborted_by, format_measured, results_of
from bench.util.redact import redact_text

HEADERS = ["Threshold", "Task", "Result", "Measured"]


def _cells(r: ThresholdResult) -> list[str]:
    measured = format_measured(r.value, r.unit) if r.result != "error" else f"not evaluated: {r.reason}"
    verdict = {"passed": "passed", "failed": "FAILED", "error": "ERROR"}[r.result]
    return [r.threshold + (" (abort-on-fail)" if r.abort_on_fail else ""), r.task,
            verdict + (" (stopped the race)" if r.aborted else ""), measured]


def threshold_text(summary: Summary, fmt: str) -> str:
    """The thresholds as a table of their own ('' when the race had none): shown on the terminal too."""
    results = results_of(summary)
    if not results:
        return ""
    grid = tabulate([_cells(r) for r in results], headers=HEADERS, tablefmt="github" if fmt == "markdown" else "simple",
                    disable_numparse=True)
    failed = sum(r.result != "passed" for r in results)
    head = f"Thresholds: {len(results) - failed} of {len(results)} passed"
    return redact_text(f"{'## ' if fmt == 'markdown' else ''}{head}\n\n{grid}")


def threshold_csv_rows(summary: Summary) -> list[list[Any]]:
    """csv rows (Metric, Task, Value, Unit, Partial): ``threshold SCOPE:EXPR: passed|failed|error`` and the
    measured value (empty when it could not be evaluated, the reason in the Partial column)."""
    out: list[list[Any]] = []
    for r in results_of(summary):
        value = "" if r.value is None else (r.value * 100.0 if r.unit == "%" else r.value)
        out.append([f"threshold {r.threshold}: {r.result}", r.task, value, r.unit, r.reason])
    return out


def threshold_records(summary: Summary) -> list[dict[str, Any]]:
    """json: each threshold's verdict with its measured value (a share for rates, as its limit)."""
    return [r.model_dump(mode="json") for r in results_of(summary)]


def junit_xml(summary: Summary | None, *, suite: str, trial_id: str, status: str, timestamp: str,
              duration_s: float) -> str:
    """One race as a JUnit testsuite (inside testsuites): a testcase per threshold, a ``failure`` element with the
    measured value for one that failed, ``error`` for one that could not be evaluated, and a testcase ``race``
    whose ``error`` says when the race itself did not end normally (Jenkins ignores a suite without testcases)."""
    results = results_of(summary)
    failures = sum(r.result == "failed" for r in results)
    race_error = status not in ("complete", "aborted-by-threshold")
    errors = sum(r.result == "error" for r in results) + race_error
    root = ET.Element("testsuites", name="bench", tests=str(len(results) + 1), failures=str(failures),
                      errors=str(errors), time=f"{duration_s:.3f}")
    ts = ET.SubElement(root, "testsuite", name=suite, tests=str(len(results) + 1), failures=str(failures),
                       errors=str(errors), skipped="0", time=f"{duration_s:.3f}", timestamp=timestamp,
                       id=trial_id)
    props = ET.SubElement(ts, "properties")
    for name, value in (("trial", trial_id), ("status", status),
                        ("aborted-by", aborted_by(summary) or "")):
        ET.SubElement(props, "property", name=name, value=redact_text(value))
    race = ET.SubElement(ts, "testcase", name="race", classname=suite, time=f"{duration_s:.3f}")
    if race_error:
        ET.SubElement(race, "error", message=f"the race ended {status}", type="race")
    for r in results:
        case = ET.SubElement(ts, "testcase", name=f"{r.threshold} [{r.task}]" if r.task != r.threshold.rpartition(
            ":")[0] else r.threshold, classname=f"{suite}.thresholds", time="0")
        if r.result == "failed":
            el = ET.SubElement(case, "failure", message=redact_text(r.line), type="threshold")
            el.text = redact_text(f"{r.threshold}: measured {format_measured(r.value, r.unit)}, limit {r.op} "
                                  f"{format_measured(r.limit, r.unit)} ({r.origin})")
        elif r.result == "error":
            ET.SubElement(case, "error", message=redact_text(r.line), type="not-evaluated")
        else:
            ET.SubElement(case, "system-out").text = f"measured {format_measured(r.value, r.unit)}"
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"
