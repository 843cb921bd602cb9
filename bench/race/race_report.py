"""The report a race writes (``--report-format``, ``--report-file``): the summary's formats, or JUnit XML, which
needs the trial itself (its id, track, challenge, start and how it ended)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import cast

from bench.results.report import ReportFormat, render_summary
from bench.results.summary import Summary
from bench.results.threshold_report import junit_xml
from bench.trials.model import TrialInfo


def race_report(summary: Summary | None, fmt: str, trial: TrialInfo, status: str) -> str:
    """The race's report in ``fmt``: '' for a race with no summary, except JUnit, which says how it ended."""
    if fmt == "junit":
        start = trial.start_time if trial.start_time.tzinfo else trial.start_time.replace(tzinfo=UTC)
        end = trial.end_time or datetime.now(UTC)
        end = end if end.tzinfo else end.replace(tzinfo=UTC)
        return junit_xml(summary, suite=f"bench.{trial.track}.{trial.challenge}", trial_id=trial.id, status=status,
                         timestamp=start.strftime("%Y-%m-%dT%H:%M:%S"),
                         duration_s=max(0.0, (end - start).total_seconds()))
    if summary is None:
        return ""
    return render_summary(summary, cast(ReportFormat, fmt))  # an unknown format is render_summary's one line
