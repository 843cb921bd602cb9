"""The "CCR drills" section of a race summary: each measured bootstrap (time to syncing, bytes, MB/s, the leader's
CPU and transport bytes out) and each failover drill (RTO, RPO). A drill that failed has no rows: its error goes to
the summary's unmeasured list, so the race fails."""

from __future__ import annotations

import json
from typing import Any

import pandas as pd
from pydantic import BaseModel, ValidationError

from bench.ccr.drill_figures import MB, BootstrapFigures, FailoverFigures
from bench.results.summary import MetricRow

DRILLS_SECTION = "ccr-drills"
BOOTSTRAP = "ccr-bootstrap"

TIME_TO_SYNCING = "CCR bootstrap time to syncing"
TRANSFER_RATE = "CCR bootstrap transfer rate"
RTO = "CCR failover RTO"
RPO = "CCR failover RPO"
# (pattern, higher is better) for compare and the study
DIRECTIONS: tuple[tuple[str, bool | None], ...] = (
    (r"^CCR bootstrap (time to syncing|leader CPU)|^CCR failover (RTO|RPO|documents lost)", False),
    (r"^CCR bootstrap transfer rate", True),
    (r"^CCR bootstrap (transferred|leader transport out)", None),
)


class DrillsSection(BaseModel):
    bootstrap: list[BootstrapFigures] = []
    failover: list[FailoverFigures] = []


def bootstraps_of(samples: pd.DataFrame) -> list[BootstrapFigures]:
    """The measured bootstraps of a trial's samples (successful ccr-bootstrap requests, warmup or not)."""
    if samples.empty or "meta" not in samples:
        return []
    out = []
    rows = samples[(samples["operation_type"] == BOOTSTRAP) & samples["success"]]
    for task, meta in zip(rows["task"], rows["meta"], strict=True):
        try:
            data = json.loads(meta or "{}").get("bootstrap")
            if data is not None:
                out.append(BootstrapFigures.model_validate({**data, "task": task}))
        except (ValueError, ValidationError, AttributeError):
            continue  # not a bootstrap's meta: no figures rather than wrong ones
    return out


def unmeasured(section: DrillsSection) -> list[str]:
    return [f"CCR failover drill {f.task} ({f.mode}) on {f.cluster}/{f.index} failed: {f.error}"
            for f in section.failover if f.error]


def drill_rows(data: dict[str, Any]) -> list[MetricRow]:
    if not data:
        return []
    s = DrillsSection.model_validate(data)
    rows: list[MetricRow] = []

    def add(metric: str, scope: str, value: float | None, unit: str) -> None:
        if value is not None:
            rows.append(MetricRow(metric=metric, task=scope, value=value, unit=unit))

    for b in s.bootstrap:
        scope = f"{b.cluster}/{b.index}"
        add(TIME_TO_SYNCING, scope, b.seconds_to_syncing, "s")
        add("CCR bootstrap transferred", scope, b.recovered_bytes / MB if b.recovered_bytes is not None else None,
            "MB")
        add(TRANSFER_RATE, scope, b.mb_s, "MB/s")
        leader = f"{b.leader_cluster}/{b.leader_index}"
        add("CCR bootstrap leader CPU", leader, b.leader_cpu_pct, "%")
        add("CCR bootstrap leader transport out", leader,
            b.leader_tx_bytes / MB if b.leader_tx_bytes is not None else None, "MB")
    for f in s.failover:
        if f.error:
            continue
        scope = f"{f.cluster}/{f.index} ({f.mode})"
        add(RTO, scope, f.rto_s, "s")
        add(RPO, scope, f.rpo_ops, "ops")
        if f.leader_docs_at_cut is not None and f.follower_docs_after is not None:
            add("CCR failover documents lost", scope, max(0, f.leader_docs_at_cut - f.follower_docs_after), "docs")
    return rows


def notes(section: DrillsSection) -> list[str]:
    out = [f"CCR bootstrap {b.cluster}/{b.index}: {n}" for b in section.bootstrap for n in b.notes]
    for f in section.failover:
        if f.error:
            out.append(f"CCR failover drill {f.task} ({f.mode}): FAILED: {f.error}; no RTO or RPO is reported.")
        else:
            out.append(f"CCR failover drill {f.task} ({f.mode}): cut after {f.cut_after_docs:,} acknowledged documents "
                       f"({f.cut_after_s:.1f} s of indexing); leader {f.leader_ops} ops, follower {f.follower_ops} "
                       f"(checkpoints summed over shards); promotion took {f.promote_s or 0:.2f} s of the RTO.")
    return out
