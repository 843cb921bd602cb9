"""Cluster roles across compared trials: a one-cluster baseline's cluster is the CCR trial's leader.

A baseline race runs on one cluster named ``default`` (nodes ``default-0``, ...); the same load with CCR runs
on ``leader`` while ``follower`` follows. Their per-cluster and per-node rows (telemetry and other sections'
scopes such as ``default/default-0``, ``node-stats@default``) only line up when the baseline's cluster is
read as the leader. ``role_mapping`` decides that for the trials of a comparison (pure); compare keys such
rows by the leader's scope and shows the trial's own scope beside it, so no row is mapped silently. Task and
cluster-total rows have no cluster scope and are never renamed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel

if TYPE_CHECKING:
    from bench.compare.model import Side, TrialData

BASELINE_CLUSTER = "default"  # the name bench gives the one cluster of a race
LEADER_CLUSTER = "leader"
_TELEMETRY_SECTION = "telemetry"


class RoleMapping(BaseModel):
    """Rows of ``trials`` scoped by cluster ``source`` are compared as cluster ``target``'s."""

    source: str = BASELINE_CLUSTER
    target: str = LEADER_CLUSTER
    trials: set[str]  # ids of the trials whose rows are mapped

    def scope(self, scope: str) -> str:
        """``default`` -> ``leader``, ``default/default-0`` -> ``leader/leader-0`` (a node named after its
        cluster keeps its number), ``default/other`` -> ``leader/other``, ``node-stats@default`` ->
        ``node-stats@leader``; any other scope is unchanged."""
        src, dst = self.source, self.target
        if scope == src:
            return dst
        if scope.startswith(f"{src}/"):
            rest = scope[len(src) + 1:]
            if rest.startswith(f"{src}-"):
                rest = f"{dst}-{rest[len(src) + 1:]}"
            return f"{dst}/{rest}"
        if scope.endswith(f"@{src}"):
            return f"{scope[:-len(src)]}{dst}"
        return scope

    def note(self, side_labels: list[str]) -> str:
        return (f"Cluster roles: the one cluster '{self.source}' of {', '.join(side_labels)} is compared as "
                f"the '{self.target}' of the other trials; rows scoped '{self.target}…' say which "
                f"'{self.source}' scope they came from. Rows of other clusters (the follower) have no "
                "counterpart.")


def trial_clusters(trial: TrialData) -> set[str]:
    """The clusters a trial ran on: as stored with the trial, else those its telemetry names."""
    names = {str(c.get("name")) for c in trial.info.clusters if c.get("name")}
    if names or trial.summary is None:
        return names
    section = trial.summary.section(_TELEMETRY_SECTION)
    return {str(x.get("cluster")) for key in ("nodes", "devices") for x in section.get(key, [])
            if x.get("cluster") and x.get("cluster") not in ("host", "driver")}


def role_mapping(sides: list[Side]) -> RoleMapping | None:
    """Map the trials that ran on the one cluster ``default`` to ``leader`` when another compared trial ran on
    a cluster named ``leader``; None when no trial needs it."""
    clusters = {t.info.id: trial_clusters(t) for s in sides for t in s.trials}
    if not any(LEADER_CLUSTER in c for c in clusters.values()):
        return None
    mapped = {tid for tid, c in clusters.items() if c == {BASELINE_CLUSTER}}
    return RoleMapping(trials=mapped) if mapped else None
