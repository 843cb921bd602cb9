"""The result of a trial: per-task throughput, latency, service time and errors, plus cluster totals.

``summarize`` is pure: samples (and optionally cluster totals) in, ``Summary`` out. Warmup samples are
excluded from every statistic and only counted (``warmup_requests``). Throughput counts successful work only
(``bench.results.stats``). Latency and service-time percentiles cover all measured requests, failed ones included, as
in Rally, as long as the task got any work done; a task whose requests all failed has no throughput, latency or
service time at all -- only its error count and its distinct error messages.
Cluster rows show the cumulative totals read at the end of the race, as Rally does.

Extensions add sections (telemetry, CCR, ...) to a summary: ``Summary.sections`` holds them by name as stored,
and ``register_section`` (``bench.results.sections``, called from an extension's ``setup()``) says how one becomes
report rows, so this module knows no extension.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
from pydantic import BaseModel, model_validator

from bench.driver.item_errors import parse_item_failures
from bench.http.cluster_stats import ClusterTotals

# The sections seam is documented as bench.results.summary's: re-exported.
from bench.results.sections import MetricRow, section_kinds
from bench.results.sections import SectionKind as SectionKind
from bench.results.sections import register_section as register_section
from bench.results.sections import section_title as section_title
from bench.results.stats import (
    ThroughputStats,
    error_stats,
    measured_duration,
    percentiles,
    percentiles_for_sample_size,
    request_failed,
    successful_units,
    throughput_stats,
)
from bench.util.numbers import percent

GB = 1024 ** 3
log = logging.getLogger(__name__)
_unshown: set[str] = set()  # sections no installed extension renders, warned about once


class ErrorCount(BaseModel):
    """One distinct error message and how many requests got it. A list of these, not a dict keyed by message:
    the store's redaction masks the *values* of secret-looking keys, and a message may well say "credentials"."""

    message: str  # one example of the kind
    count: int
    # How many distinct messages the kind holds (they differ in document ids, values, index UUIDs ...).
    variants: int = 1
    documents: int = 0  # documents that failed with it (bulk items, or every document of a bulk that failed whole)
    # When the first and the last request that got it completed, seconds after its step started (None: stored
    # before these were kept).
    first_s: float | None = None
    last_s: float | None = None


class TaskSummary(BaseModel):
    task: str
    operation_type: str
    unit: str  # "docs" or "ops"
    throughput: ThroughputStats | None = None  # None: no measurement samples
    latency: dict[float, float] = {}  # percentile -> ms
    service_time: dict[float, float] = {}  # percentile -> ms
    error_rate: float = 0.0  # failed requests / requests, 0..1
    requests: int = 0
    failed_requests: int = 0
    units: int = 0
    failed_units: int = 0  # e.g. bulk items that failed (document-level errors)
    errors_by_type: dict[str, int] = {}  # failed requests per error type, e.g. {"http-429": 55}
    unanswered_requests: int = 0  # failed requests that got no HTTP answer (connection, timeout, client error)
    duration_s: float = 0.0  # measured: first scheduled start to last completion
    warmup_requests: int = 0
    warmup_failed_requests: int = 0
    # Distinct error messages of the task's failed requests (warmup included) -> how many requests got each.
    error_messages: list[ErrorCount] = []
    # k6's end-of-test figures for request/response tasks (search, loadgen requests); empty for others.
    k6: dict[str, float] = {}
    # How long after its due time each request was sent (latency - service time), percentile -> ms: how far behind
    # its schedule a paced task fell. Empty when no request was sent SCHEDULE_LAG_SHOWN_MS late (unpaced tasks).
    schedule_lag: dict[float, float] = {}
    # Arrival-rate tasks (bench.results.dropped): the iterations due in the measured part, and of them those that
    # found no client free and were never sent. 0 for a closed-loop task.
    scheduled_iterations: int = 0
    dropped_iterations: int = 0
    # Of dropped_iterations, at least those that were the load driver's: due while a client was still free that
    # took an earlier iteration only after they were due (the driver behind its schedule).
    dropped_late_iterations: int = 0


class Summary(BaseModel):
    tasks: list[TaskSummary] = []
    cluster: ClusterTotals | None = None
    notes: list[str] = []
    # Extensions' sections by name (JSON-ready dicts), shown through what each registered (register_section).
    sections: dict[str, dict[str, Any]] = {}
    # Key measurements the run could not take, one reason each, recorded by extensions (e.g. CCR followers that
    # never synced): such a run exits non-zero (bench.results.exit_status) whatever its other rows say.
    unmeasured: list[str] = []

    @model_validator(mode="before")
    @classmethod
    def _unknown_keys_are_sections(cls, data: Any) -> Any:
        """Summaries stored before sections were generic had each section as a top-level key: any unknown
        top-level dict is a section (an empty one is no section, as it was then)."""
        if not isinstance(data, dict):
            return data
        extra = {k: v for k, v in data.items() if k not in cls.model_fields and isinstance(v, dict)}
        if not extra:
            return data
        sections = {**{k: v for k, v in extra.items() if v}, **(data.get("sections") or {})}
        return {**{k: v for k, v in data.items() if k not in extra}, "sections": sections}

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Summary:
        """As pydantic's, but an unknown key of ``update`` is a section, as when validating."""
        update = dict(update or {})
        extra = {k: update.pop(k) for k in list(update) if k not in type(self).model_fields}
        if extra:
            update["sections"] = {**update.get("sections", self.sections), **{k: v for k, v in extra.items() if v}}
        return super().model_copy(update=update, deep=deep)

    def __getattr__(self, name: str) -> Any:
        # Code written before sections were generic reads one as an attribute (summary.telemetry).
        sections = self.__dict__.get("sections")
        if sections is not None and not name.startswith("_"):
            if name in sections:
                return sections[name]
            if name in {k.name for k in section_kinds()}:
                return {}
        # pydantic defines BaseModel.__getattr__ only when not TYPE_CHECKING, so mypy cannot see it
        return super().__getattr__(name)  # type: ignore[misc]

    def section(self, name: str) -> dict[str, Any]:
        """The section ``name`` as stored; {} when the summary has none."""
        return self.sections.get(name, {})

    def with_section(self, name: str, data: dict[str, Any], notes: Sequence[str] = ()) -> Summary:
        """A copy with the section ``name`` set and ``notes`` added."""
        return self.model_copy(update={"sections": {**self.sections, name: data}, "notes": [*self.notes, *notes]})

    def labelled_rows(self) -> list[tuple[str, MetricRow]]:
        """(section name or "" for cluster and task rows, row), in report order."""
        rows: list[tuple[str, MetricRow]] = [("", r) for r in (cluster_rows(self.cluster) if self.cluster else [])]
        for t in self.tasks:
            rows.extend(("", r) for r in task_rows(t))
        kinds = {k.name: k for k in section_kinds()}
        for name in sorted(set(self.sections) - set(kinds) - _unshown):
            if self.sections[name]:
                _unshown.add(name)
                log.warning("summary section %r is not shown: no installed extension renders it", name)
        for kind in kinds.values():
            data = self.sections.get(kind.name)
            if not data:
                continue
            if kind.hides is not None:
                rows = [(s, r) for s, r in rows if not kind.hides(r.metric)]
            rows.extend((kind.name, r) for r in kind.rows(data))
        return rows

    def rows(self) -> list[MetricRow]:
        """Rally-style report rows: cluster totals first, then each task in schedule order, then each section."""
        return [r for _, r in self.labelled_rows()]

    def task(self, name: str) -> TaskSummary | None:
        return next((t for t in self.tasks if t.task == name), None)

    @property
    def failed_requests(self) -> int:
        """Failed requests of every task, warmup included: any makes the trial "complete, with errors"."""
        return sum(t.failed_requests + t.warmup_failed_requests for t in self.tasks)


def status_label(status: str, summary: Summary | None) -> str:
    """A trial's status as shown to people: a complete trial with failed requests says so at a glance. Derived
    from the stored summary, not stored, so the stored status keeps meaning "how the run ended"."""
    failed = summary.failed_requests if summary is not None else 0
    if status == "complete" and failed:
        return f"complete, with errors ({failed} failed request{'s' if failed != 1 else ''})"
    return status


def percentile_label(p: float) -> str:
    """50.0 -> "50th", 99.9 -> "99.9th" (Rally's naming)."""
    return f"{p:g}th"


def cluster_rows(c: ClusterTotals) -> list[MetricRow]:
    p, t = c.primaries, c.total
    ordered: list[MetricRow] = []

    def minutes(metric: str, ms: float) -> None:
        ordered.append(MetricRow(metric=metric, task="", value=ms / 60000.0, unit="min"))

    # Rally's order: each cumulative time, its count where it has one, then its spread across primary shards.
    for what, name, count in (("indexing time", "index_time_ms", None),
                              ("indexing throttle time", "index_throttle_time_ms", None),
                              ("merge time", "merge_time_ms", ("merge count", p.merge_total)),
                              ("merge throttle time", "merge_throttle_time_ms", None),
                              ("refresh time", "refresh_time_ms", ("refresh count", p.refresh_total)),
                              ("flush time", "flush_time_ms", ("flush count", p.flush_total))):
        minutes(f"Cumulative {what} of primary shards", getattr(p, name))
        if count is not None:
            ordered.append(MetricRow(metric=f"Cumulative {count[0]} of primary shards", task="", value=count[1],
                                     unit=""))
        spread = c.per_shard.get(name)
        if spread is not None:
            for label, ms in (("Min", spread.min), ("Median", spread.median), ("Max", spread.max)):
                minutes(f"{label} cumulative {what} across primary shards", ms)
    if c.gc is not None:  # during the schedule, as Rally reports them
        ordered += [MetricRow(metric="Total Young Gen GC time", task="", value=c.gc.young_time_ms / 1000.0, unit="s"),
                    MetricRow(metric="Total Young Gen GC count", task="", value=c.gc.young_count, unit=""),
                    MetricRow(metric="Total Old Gen GC time", task="", value=c.gc.old_time_ms / 1000.0, unit="s"),
                    MetricRow(metric="Total Old Gen GC count", task="", value=c.gc.old_count, unit="")]
    ordered.append(MetricRow(metric="Store size", task="", value=t.store_size_bytes / GB, unit="GB"))
    if t.translog_size_bytes is not None:
        ordered.append(MetricRow(metric="Translog size", task="", value=t.translog_size_bytes / GB, unit="GB"))
    ordered += [
        MetricRow(metric="Segment count", task="", value=p.segment_count, unit=""),
    ]
    return ordered + doc_count_rows(c)


def doc_count_rows(c: ClusterTotals) -> list[MetricRow]:
    """Documents after the race's final refresh: one row per cluster of a race of several (its name in the Task
    column), one unnamed row (Rally's and OSB's ``Doc count``) for a race of one. A trial stored before the counts
    were refreshed has the ``_stats`` reading of its first cluster, which lags what was indexed: said in the name."""
    counts = c.docs_after_refresh
    if not counts:
        return [MetricRow(metric="Doc count (not refreshed)", task=c.cluster or "", value=c.primaries.docs_count,
                          unit="")]
    if len(counts) == 1:
        return [MetricRow(metric="Doc count", task="", value=next(iter(counts.values())), unit="")]
    return [MetricRow(metric="Doc count", task=name, value=n, unit="") for name, n in counts.items()]


def task_rows(t: TaskSummary) -> list[MetricRow]:
    rows: list[MetricRow] = []
    if t.throughput is not None:
        tp, u = t.throughput, t.throughput.unit
        rows += [MetricRow(metric="Min Throughput", task=t.task, value=tp.min, unit=u),
                 MetricRow(metric="Mean Throughput", task=t.task, value=tp.mean, unit=u),
                 MetricRow(metric="Median Throughput", task=t.task, value=tp.median, unit=u),
                 MetricRow(metric="Max Throughput", task=t.task, value=tp.max, unit=u)]
        if tp.rate is not None:
            rows.append(MetricRow(metric="Measured-part throughput", task=t.task, value=tp.rate, unit=u))
    rows += [MetricRow(metric=f"{percentile_label(p)} percentile latency", task=t.task, value=v, unit="ms")
             for p, v in sorted(t.latency.items())]
    rows += [MetricRow(metric=f"{percentile_label(p)} percentile service time", task=t.task, value=v,
                       unit="ms") for p, v in sorted(t.service_time.items())]
    rows += [MetricRow(metric=f"{percentile_label(p)} percentile schedule lag", task=t.task, value=v, unit="ms")
             for p, v in sorted(t.schedule_lag.items())]
    if t.requests:
        rows.append(MetricRow(metric="error rate", task=t.task, value=t.error_rate * 100.0, unit="%"))
    if t.failed_requests:
        rows.append(MetricRow(metric="failed requests", task=t.task, value=t.failed_requests, unit=""))
    if t.scheduled_iterations:
        rows += [MetricRow(metric="scheduled iterations", task=t.task, value=t.scheduled_iterations, unit=""),
                 MetricRow(metric="dropped iterations", task=t.task, value=t.dropped_iterations, unit=""),
                 MetricRow(metric="dropped iterations (driver late)", task=t.task,
                           value=t.dropped_late_iterations, unit="")]
    rows += [MetricRow(metric=name, task=t.task, value=t.k6[key], unit=unit) for key, name, unit in K6_ROWS
             if key in t.k6]
    return rows


# key, row name, unit: k6's end-of-test summary names (http_req_duration is the service time).
K6_ROWS: list[tuple[str, str, str]] = [
    ("duration_avg", "k6 http_req_duration avg", "ms"), ("duration_min", "k6 http_req_duration min", "ms"),
    ("duration_med", "k6 http_req_duration med", "ms"), ("duration_max", "k6 http_req_duration max", "ms"),
    ("duration_p90", "k6 http_req_duration p(90)", "ms"), ("duration_p95", "k6 http_req_duration p(95)", "ms"),
    ("failed_pct", "k6 http_req_failed", "%"), ("reqs_per_s", "k6 http_reqs", "req/s"),
    ("data_received_mb", "k6 data_received", "MB"), ("data_received_mb_s", "k6 data_received rate", "MB/s"),
    ("data_sent_mb", "k6 data_sent", "MB"), ("data_sent_mb_s", "k6 data_sent rate", "MB/s"),
]
K6_TYPES = frozenset({"search", "loadgen-request"})


def k6_figures(measured: pd.DataFrame, duration_s: float) -> dict[str, float]:
    """k6's figures over measured samples: request duration (service time) avg/min/med/max/p90/p95 in ms, failed %,
    requests/s, data received/sent (response/request bodies, MB = 10^6 bytes as k6 prints them) and their rates."""
    st = measured["service_time"].to_numpy() * 1000.0
    if len(st) == 0:
        return {}
    pct = percentiles(st, [50.0, 90.0, 95.0])
    dur = max(duration_s, 1e-9)
    received = float(measured["bytes_received"].sum()) if "bytes_received" in measured else 0.0
    sent = float(measured["bytes_sent"].sum())
    return {"duration_avg": float(st.mean()), "duration_min": float(st.min()), "duration_med": pct[50.0],
            "duration_max": float(st.max()), "duration_p90": pct[90.0], "duration_p95": pct[95.0],
            "failed_pct": float((~measured["success"].astype(bool)).mean() * 100.0), "reqs_per_s": len(st) / dur,
            "data_received_mb": received / 1e6, "data_received_mb_s": received / 1e6 / dur,
            "data_sent_mb": sent / 1e6, "data_sent_mb_s": sent / 1e6 / dur}


def summarize_task(task: str, df: pd.DataFrame) -> TaskSummary:
    """Summary of one task's samples (both phases; warmup only counted)."""
    warm = df["warmup"].astype(bool)
    measured = df[~warm]
    first = df.iloc[0]
    s = TaskSummary(task=task, operation_type=str(first["operation_type"]), unit=str(first["unit"]),
                    warmup_requests=int(warm.sum()), warmup_failed_requests=int(request_failed(df[warm]).sum()),
                    error_messages=error_messages(df))
    if measured.empty:
        return s
    errors = error_stats(measured)
    if float(successful_units(measured).sum()) <= 0:
        # Nothing succeeded: timings of failures are not measurements of the operation.
        return s.model_copy(update=dict(
            error_rate=errors.error_rate, requests=errors.requests, failed_requests=errors.failed_requests,
            units=errors.units, failed_units=errors.failed_units, duration_s=measured_duration(measured),
            errors_by_type=errors.by_type, unanswered_requests=errors.unanswered))
    pcts = percentiles_for_sample_size(len(measured))
    lag = (measured["latency"].to_numpy() - measured["service_time"].to_numpy()) * 1000.0
    return s.model_copy(update=dict(
        schedule_lag=percentiles(lag, SCHEDULE_LAG_PERCENTILES) if lag.max() >= SCHEDULE_LAG_SHOWN_MS else {},
        throughput=throughput_stats(df, task),
        latency=percentiles(measured["latency"].to_numpy() * 1000.0, pcts),
        service_time=percentiles(measured["service_time"].to_numpy() * 1000.0, pcts),
        error_rate=errors.error_rate, requests=errors.requests, failed_requests=errors.failed_requests,
        units=errors.units, failed_units=errors.failed_units, duration_s=measured_duration(measured),
        errors_by_type=errors.by_type, unanswered_requests=errors.unanswered,
        k6=k6_figures(measured, measured_duration(measured)) if s.operation_type in K6_TYPES else {},
    ))


SCHEDULE_LAG_SHOWN_MS = 1.0  # below this no request waited for anything but its due time: an unpaced task
SCHEDULE_LAG_PERCENTILES = (50.0, 90.0, 99.0, 100.0)
BEHIND_SCHEDULE_MS = 10.0  # a paced task whose p99 schedule lag exceeds this gets a note


def behind_schedule_note(ts: TaskSummary) -> str | None:
    """The note of a task that sent its requests late against its schedule: how late, and what that means."""
    lag = ts.schedule_lag
    if lag.get(99.0, 0.0) <= BEHIND_SCHEDULE_MS:
        return None
    return (f"Task '{ts.task}' fell behind its schedule: requests were sent {lag[50.0]:,.1f} ms (median), "
            f"{lag[99.0]:,.1f} ms (p99) and up to {lag[100.0]:,.1f} ms after they were due; its latency includes "
            "that wait, its service time does not.")


MAX_MESSAGES = 10  # distinct messages listed per task in notes; all of them stay in the stored summary
MAX_MESSAGE_CHARS = 500


# What makes messages of one kind of failure differ: document ids, values, index UUIDs, counts, positions.
_VARIABLE_PARTS = [
    (re.compile(r"\b\d+ of \d+ documents failed"), "N of M documents failed"),
    (re.compile(r"(with id) '[^']*'"), r"\1 '…'"),
    (re.compile(r"(Preview of field's value:) .*$", re.S), r"\1 …"),
    (re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"), "…"),
    (re.compile(r"(\[[^\]/\s]*/)[A-Za-z0-9_-]{22}\]"), r"\1…]"),  # [index/uuid]
    (re.compile(r"\[[A-Za-z0-9_-]{22}\]"), "[…]"),  # an index UUID
    (re.compile(r"\[[^\]]*\](: version conflict)"), r"[…]\1"),  # the document id of a conflict
    (re.compile(r"\[\d+(:\d+)?\]"), "[…]"),  # positions, versions, shard numbers
]


def error_kind(message: str) -> str:
    """A failure message with its document ids, values and UUIDs taken out: what groups failures of one kind
    (type, reason and field stay)."""
    for pattern, repl in _VARIABLE_PARTS:
        message = pattern.sub(repl, message)
    return message


def error_messages(df: pd.DataFrame) -> list[ErrorCount]:
    """The failed requests in ``df`` grouped by kind (``error_kind``: the message without document ids, values
    and UUIDs) -> one example message, the count of requests, for bulk item failures the documents, how many
    distinct messages, and the first and last time one completed; most frequent first. A bulk whose items failed
    in several ways counts in each of its kinds (``bench.driver.item_errors``). A failure stored without a message
    (older trials) is listed by its error type."""
    failed = request_failed(df)
    if not failed.any():
        return []
    types = df.loc[failed, "error_type"].fillna("item-errors").astype(str)
    msgs = df.loc[failed, "error"] if "error" in df else pd.Series(None, index=types.index, dtype=object)
    text = msgs.where(msgs.notna(), types).astype(str)
    part = pd.DataFrame({"t": df.loc[failed, "relative_time"].astype(float),
                         "docs": df.loc[failed, "failed_units"].where(df.loc[failed, "unit"] == "docs", 0)})
    by_text = part.groupby(text.to_numpy(), sort=False).agg(n=("t", "size"), first=("t", "min"), last=("t", "max"),
                                                            docs=("docs", "sum"))
    # (message, requests, documents, first, last), a bulk's text split into its kinds; a bulk that failed as a
    # whole (no answer, an HTTP error) failed all its documents
    entries: list[tuple[str, int, int, float, float]] = []
    for message, n, first, last, failed_docs in zip(by_text.index, by_text["n"], by_text["first"], by_text["last"],
                                                    by_text["docs"]):
        kinds = parse_item_failures(str(message))
        if kinds is None:
            entries.append((str(message)[:MAX_MESSAGE_CHARS], int(n), int(failed_docs), float(first), float(last)))
        else:
            entries += [(m[:MAX_MESSAGE_CHARS], int(n), docs * int(n), float(first), float(last)) for docs, m in kinds]
    grouped: dict[str, tuple[ErrorCount, set[str]]] = {}
    for message, n, docs, first, last in sorted(entries, key=lambda e: (-e[1], e[0])):
        kind = grouped.get(key := error_kind(message))
        if kind is None:
            grouped[key] = (ErrorCount(message=message, count=n, documents=docs, first_s=first, last_s=last),
                            {message})
            continue
        e, seen = kind
        e.count, e.documents = e.count + n, e.documents + docs
        e.first_s = first if e.first_s is None else min(e.first_s, first)
        e.last_s = last if e.last_s is None else max(e.last_s, last)
        seen.add(message)
        e.variants = len(seen)
    return sorted((e for e, _ in grouped.values()), key=lambda e: (-e.count, -e.documents, e.message))


def messages_text(messages: list[ErrorCount]) -> str:
    """'3× HTTP 404: ... (first 1.2 s, last 3.4 s after its step started); 1× timeout (...)' (at most
    MAX_MESSAGES, then how many more)."""
    shown = [f"{e.count:,}× {e.message}" + (f" ({e.documents:,} documents)" if e.documents else "")
             + (f" (e.g.; {e.variants} messages of this kind, differing in ids or values)" if e.variants > 1 else "")
             + _when(e) for e in messages[:MAX_MESSAGES]]
    more = len(messages) - MAX_MESSAGES
    return "; ".join(shown) + (f"; and {more} more kinds of error" if more > 0 else "")


def _when(e: ErrorCount) -> str:
    if e.first_s is None or e.last_s is None:
        return ""  # stored before the times were kept
    if e.count == 1:
        return f" (at {e.first_s:,.1f} s after its step started)"
    return f" (first {e.first_s:,.1f} s, last {e.last_s:,.1f} s after its step started)"


def error_note(ts: TaskSummary) -> str:
    """The warning for a task with failed requests: how many, of which type, and whose side they came from."""
    kinds = ", ".join(f"{n:,} {t}" for t, n in sorted(ts.errors_by_type.items(), key=lambda kv: (-kv[1], kv[0])))
    answered = ts.failed_requests - ts.unanswered_requests
    if ts.unanswered_requests == 0:
        side = "the cluster answered every one of them"
    elif answered <= 0:
        side = "none got an HTTP answer (connection, timeout or client error)"
    else:
        side = f"{ts.unanswered_requests:,} got no HTTP answer (connection, timeout or client error)"
    hint = ("; HTTP 429 means the cluster rejected requests (a full thread-pool queue): lower the load or "
            "give the cluster more capacity" if "http-429" in ts.errors_by_type else "")
    head = (f"Every request of task '{ts.task}' failed: no throughput, latency or service time is reported"
            if ts.throughput is None and not ts.latency else f"Error rate is {percent(ts.error_rate * 100, 2)}% for task "
            f"'{ts.task}'")
    return (f"{head} "
            f"({ts.failed_requests:,} of {ts.requests:,} requests failed"
            + (f", {ts.failed_units:,} {ts.unit} failed" if ts.failed_units else "")
            + (f": {kinds}" if kinds else "") + f"; {side}{hint}). Errors: {messages_text(ts.error_messages)}")


def summarize(samples_df: pd.DataFrame, cluster: ClusterTotals | None = None) -> Summary:
    """Summarize a trial's samples; tasks appear in the order they started."""
    tasks: list[TaskSummary] = []
    notes: list[str] = []
    if not samples_df.empty:
        order = samples_df.groupby("task", sort=False)["absolute_time"].min().sort_values(kind="stable")
        for task in order.index:
            ts = summarize_task(str(task), samples_df[samples_df["task"] == task])
            tasks.append(ts)
            if ts.requests == 0:
                notes.append(f"Task '{ts.task}' has only warmup samples ({ts.warmup_requests}); "
                             "nothing was measured: lengthen the task or shorten its warmup.")
            elif ts.error_rate > 0:
                notes.append(error_note(ts))
            elif ts.warmup_failed_requests:
                notes.append(f"{ts.warmup_failed_requests} warmup request(s) of task '{ts.task}' failed: "
                             f"{messages_text(ts.error_messages)}")
            if (behind := behind_schedule_note(ts)) is not None:
                notes.append(behind)
    return Summary(tasks=tasks, cluster=cluster, notes=notes)
