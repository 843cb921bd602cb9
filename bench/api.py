"""bench's public extension API: everything an extension registers, and the types it is given and returns.

An extension is a package whose ``setup()`` is published under the ``bench.extensions`` entry-point group
(``bench.extensions``); ``setup()`` calls the ``register_*`` functions below. Import from here, not from the
modules that implement the seams: their place may change, this module's names do not (``__all__`` is checked by
``tests/project/test_api.py`` against every ``register_*`` function of the core).

=========================  ===============================================================================
seam                       what it adds
=========================  ===============================================================================
``register_runner``        an ``operation-type`` tracks can use (with its load-time checks)
``register_param_source``  the parameter source of an operation type's clients
``register_scheduler``     a ``"schedule"`` name tracks can use
``register_race_hook``     steps before provisioning, around the schedule and after it
``register_source``        where a race's clusters come from (e.g. a topology, a cloud)
``register_section``       a section of the summary and reports (rows, headline rows, tables, plots)
``register_enricher``      what adds a section to a stored trial's summary
``register_metric``        whether a compared row is better higher or lower, and its unit
``register_pool_backend``  where the load driver's workers run (e.g. Ray)
``register_secret``        a value never to be written to logs, trials, reports or metrics stores
``register_live_rows``     rows of the live view made from the telemetry stored while a race runs
=========================  ===============================================================================
"""

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
from bench.results.sections import MetricRow, SectionRows, SectionTable, SectionTables, register_section
from bench.results.summary import Summary, TaskSummary
from bench.trials.model import TrialReader
from bench.trials.summary import Enricher, register_enricher
from bench.util.errors import BenchError, ClusterError, ConfigError, TrackError
from bench.util.redact import register_secret

__all__ = [
    # the seams
    "register_enricher", "register_live_rows", "register_metric", "register_param_source", "register_pool_backend",
    "register_race_hook", "register_runner", "register_scheduler", "register_secret", "register_section",
    "register_source",
    # operations
    "Context", "OperationCheck", "Result", "Runner", "SourceContext", "SourceFactory", "Scheduler", "SchedulerFactory",
    # races and clusters
    "ClusterSource", "RaceClusters", "RaceHook", "RacePlan", "RaceResult", "RaceSchedule", "RaceTargets",
    "OpenedPool", "PoolFactory",
    # summaries and reports
    "Enricher", "MetricRow", "SectionRows", "SectionTable", "SectionTables", "Summary", "TaskSummary", "TrialReader",
    # the live view
    "LiveRow", "LiveRowSource",
    # errors an extension raises: one line for the user, no traceback
    "BenchError", "ClusterError", "ConfigError", "TrackError",
]
