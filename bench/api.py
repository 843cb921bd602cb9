"""bench's public extension API: everything an extension registers, and the types it is given and returns.

An extension is a package whose ``setup()`` is published under the ``bench.extensions`` entry-point group
(``bench.extensions``); ``setup()`` calls the ``register_*`` functions below. Import from here, not from the
modules that implement the seams: their place may change, this module's names do not (``__all__`` is checked by
``tests/project/test_api.py`` against every ``register_*`` function of the core).

===============================  ========================================================================"""

from __future__ import annotations

from bench.compare.metrics import register_metric
from bench.driver.backends import OpenedPool, PoolFactory, register_pool_backend
from bench.driver.live_rows import LiveRow, LiveRowSource, register_live_rows
from bench.driver.param_sources import SourceContext, SourceFactory, register_param_source
from bench.driver.runners.core import Context, Result, Runner
from bench.driver.runners.registry import OperationCheck, register_runner
from bench.driver.schedule import Scheduler, SchedulerFactory, register_scheduler
from bench.race.cluster_source import ClusterSource, RaceClusters, register_source
from bench.race.pipeline import RaceHook, RacePlan, RaceResult, RaceSchedule, RaceTargets, register_race_hook
from bench.race.step_objectives import (
    CurvePoint,
    ObjectiveResult,
    StepContext,
    StepObjective,
    StepObjectiveType,
    StepWindow,
    register_step_objective,
    step_objective_type,
    step_objective_types,
)
from bench.results.sections import MetricRow, SectionRows, SectionTable, SectionTables, register_section
from bench.results.summary import Summary, TaskSummary
from bench.results.thresholds import register_threshold_metric
from bench.trials.model import TrialReader
from bench.trials.summary import Enricher, register_enricher
from bench.util.errors import BenchError, ClusterError, ConfigError, TrackError
from bench.util.redact import register_secret

__all__ = [
    # the seams
    "register_enricher", "register_live_rows", "register_metric", "register_param_source", "register_pool_backend",
    "register_race_hook", "register_runner", "register_scheduler", "register_secret", "register_section",
    "register_source", "register_step_objective", "register_threshold_metric",
    # operations
    "Context", "OperationCheck", "Result", "Runner", "SourceContext", "SourceFactory", "Scheduler", "SchedulerFactory",
    # races and clusters
    "ClusterSource", "RaceClusters", "RaceHook", "RacePlan", "RaceResult", "RaceSchedule", "RaceTargets",
    "OpenedPool", "PoolFactory",
    # objectives of step searches
    "CurvePoint", "ObjectiveResult", "StepContext", "StepObjective", "StepObjectiveType", "StepWindow",
    "step_objective_type",
    "step_objective_types",
    # summaries and reports
    "Enricher", "MetricRow", "SectionRows", "SectionTable", "SectionTables", "Summary", "TaskSummary", "TrialReader",
    # the live view
    "LiveRow", "LiveRowSource",
    # errors an extension raises: one line for the user, no traceback
    "BenchError", "ClusterError", "ConfigError", "TrackError",
]
