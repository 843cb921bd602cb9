"""Elasticsearch CCR's licence: platinum, enterprise or an active trial on leader and follower.

bench starts the 30-day trial where a cluster has less (what Rally's ``trial-license`` car mixin does at boot) and
says so in one line; a licence it found is one line too. Where no licence can be had (the trial was used already,
or the user may not read or start one) the error is one line saying what to do.

Which clusters: those a CCR plan wires (``prepare``), and, in a race without CCR tasks, those CCR reaches anyway:
the clusters the ``ccr-stats`` device samples (and the leaders they name as remote clusters), and clusters bench
started that are wired as follower and leader (a CCR topology running a challenge without CCR tasks).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from bench.http.client import ClusterTarget, RawHttp
from bench.telemetry.config import resolve_telemetry
from bench.util import redact
from bench.util.errors import ClusterError

log = logging.getLogger(__name__)

CCR_LICENSES = ("trial", "platinum", "enterprise")
STARTED = "started a 30-day trial licence for CCR (as Rally's trial-license car mixin does)"
_TODO = ("install a platinum or enterprise licence (PUT _license?acknowledge=true with the licence JSON) or race a "
         "fresh cluster (each cluster can start one trial)")


@dataclass(frozen=True)
class LicenseOutcome:
    cluster: str
    type: str
    started: bool  # bench started the trial just now

    def line(self) -> str:
        return STARTED if self.started else f"{self.type} license active"


def _short(body: Any) -> str:
    return redact.redact_text(" ".join(str(body).split())[:300])


def _security_reason(body: Any) -> str | None:
    """The reason of a security refusal (``security_exception``), else None."""
    err = body.get("error") if isinstance(body, dict) else None
    if isinstance(err, dict) and err.get("type") == "security_exception":
        return redact.redact_text(str(err.get("reason") or "")[:300])
    return None


def _forbidden(cluster: str, status: int, reason: str) -> ClusterError:
    return ClusterError(f"cluster {cluster}: CCR needs a platinum, enterprise or trial licence, and bench's user may "
                        f"not read or start one (HTTP {status}: {reason}): start the trial as a user with the manage "
                        f"cluster privilege (POST _license/start_trial?acknowledge=true), or {_TODO}")


async def _license(http: RawHttp, cluster: str) -> dict[str, Any]:
    status, body = await http.request("GET", "/_license")
    if status in (401, 403):
        raise _forbidden(cluster, status, _security_reason(body) or _short(body))
    if status == 404 and not (isinstance(body, dict) and body.get("error")):
        return {}  # no licence yet (a cluster that just formed has not generated its basic one): start the trial
    if status >= 400 or not isinstance(body, dict) or not isinstance(body.get("license"), dict):
        raise ClusterError(f"cluster {cluster}: CCR needs a platinum, enterprise or trial licence, and GET _license "
                           f"answered HTTP {status} {_short(body)}: CCR needs Elasticsearch's default distribution "
                           f"(with x-pack); {_TODO}")
    return dict(body["license"])


async def ensure_ccr_license(http: RawHttp, cluster: str) -> LicenseOutcome:
    """The licence CCR needs on one Elasticsearch cluster: the one it has, or the trial bench starts."""
    lic = await _license(http, cluster)
    if lic.get("type") in CCR_LICENSES and lic.get("status") == "active":
        return LicenseOutcome(cluster, str(lic["type"]), started=False)
    status, body = await http.request("POST", "/_license/start_trial", params={"acknowledge": "true"})
    if isinstance(body, dict) and body.get("trial_was_started"):
        after = await _license(http, cluster)
        if after.get("type") in CCR_LICENSES and after.get("status") == "active":
            log.info("cluster %s: trial license started", cluster)
            return LicenseOutcome(cluster, str(after["type"]), started=True)
        raise ClusterError(f"cluster {cluster}: the trial was started but the licence is {after.get('type')}/"
                           f"{after.get('status')}; CCR needs platinum, enterprise or an active trial: {_TODO}")
    reason = _security_reason(body)
    if reason is not None:
        raise _forbidden(cluster, status, reason)
    has = f"{lic.get('type')} ({lic.get('status')})" if lic else "no licence"
    if "already activated" in str(body):
        raise ClusterError(f"cluster {cluster}: CCR needs a platinum, enterprise or trial licence; it has {has} and "
                           f"has used its one trial already: {_TODO}")
    raise ClusterError(f"cluster {cluster}: CCR needs a platinum, enterprise or trial licence; it has {has} and "
                       f"starting the trial answered HTTP {status} {_short(body)}: {_TODO}")


# -- races without CCR tasks ------------------------------------------------------------------------------------


def ccr_stats_clusters(opts: Any, names: list[str]) -> list[str]:
    """The clusters the ccr-stats device will sample in this race (none when it is not chosen)."""
    cfg = resolve_telemetry(opts.telemetry, opts.telemetry_params, opts.telemetry_profile)
    if "ccr-stats" not in cfg.devices:
        return []
    wanted = cfg.params.get("ccr-stats-clusters") or names
    return [c for c in wanted if c in names]


async def remote_aliases(target: ClusterTarget) -> list[str]:
    """The remote clusters a cluster has configured (``_remote/info``); [] when it will not say."""
    async with RawHttp(target, connections=1) as http:
        status, body = await http.request("GET", "/_remote/info")
    return sorted(body) if status < 400 and isinstance(body, dict) else []


async def clusters_ccr_reaches(opts: Any, targets: list[ClusterTarget], started: set[str]) -> tuple[list[str], list[str]]:
    """(clusters needing CCR's licence, clusters ccr-stats samples) in a race without CCR tasks.

    A follower is a cluster whose remote cluster is named like another cluster of the race. Existing clusters count
    only when ccr-stats samples them (the user asked for CCR there); clusters bench started count when wired."""
    names = [t.name for t in targets]
    sampled = ccr_stats_clusters(opts, names)
    by_name = {t.name: t for t in targets}
    need: list[str] = list(sampled)
    if len(names) > 1:
        for name in names:
            if name not in sampled and name not in started:
                continue
            leaders = [a for a in await remote_aliases(by_name[name]) if a in by_name and a != name]
            if leaders and (name in sampled or all(lead in started for lead in leaders) and name in started):
                need += [name, *leaders]
    return list(dict.fromkeys(need)), sampled
