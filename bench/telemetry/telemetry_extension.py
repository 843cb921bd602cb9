"""What the telemetry extension registers with bench's seams (published as a ``bench.extensions`` entry point)."""

from __future__ import annotations

from bench.api import register_enricher, register_metric, register_race_hook, register_section
from bench.telemetry.profile import SECTION as PROFILE_SECTION
from bench.telemetry.profile_hook import ProfileHook
from bench.telemetry.profile_report import profile_plots, profile_rows
from bench.telemetry.race_hook import TelemetryHook
from bench.telemetry.section import SECTION, enrich_summary, is_headline_metric, telemetry_rows


def setup() -> None:
    register_race_hook(TelemetryHook)
    register_race_hook(ProfileHook)
    register_section(PROFILE_SECTION, rows=profile_rows, title="Profile", order=11, plots=profile_plots)
    register_metric(r"^profile ", higher_is_better=None)  # where the CPU goes: informative
    register_section(SECTION, rows=telemetry_rows, title="Telemetry", order=10, headline=is_headline_metric)
    register_enricher(SECTION, enrich_summary)
    register_metric(r"rejection|exception", higher_is_better=False)  # write thread-pool rejections, CCR exceptions
    register_metric(r"\blag\b", higher_is_better=False)  # the follower lag the ccr-stats device samples
    register_metric(r"driver cpu", higher_is_better=None)  # the load generator: informative, not the cluster's
    register_metric(r"cpu", higher_is_better=False)
    register_metric(r"^(refresh|merge|flush) time", higher_is_better=False)
    register_metric(r"^disk |^network |heap", higher_is_better=False)
    register_metric(r"telemetry samples", higher_is_better=None)
