"""Where a trial's clusters and load driver ran, and what they shared, in one line (pure).

The where comes from the facts stored with the trial: each cluster's host (machine id, CPUs, memory) and CPU
sets, the load driver's machine and CPU set, or a cloud cluster's instance type. The evidence comes from the host
telemetry device over the window of the indexing task: each cluster's node processes' CPU (in cores, 100 % = one
core) and disk writes, the load driver's CPU, and each cluster's share of the host's CPUs. On one host without
pinning, part of any CCR cost is the follower competing with the leader for the same cores and disk: the line
says which kind of run a reader sees.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
from pydantic import BaseModel

from bench.trials.model import TrialInfo
from bench.util.numbers import compact, rescale

HOST_DEVICE = "host"
DRIVER = "load driver"


class ProcessLoad(BaseModel):
    """One cluster's node processes (or the load driver's) over a window."""

    cores: float | None = None  # mean CPU, summed over the processes: 1.0 = one core busy
    write_bytes: float | None = None  # disk writes of the processes during the window


class TrialLoad(BaseModel):
    loads: dict[str, ProcessLoad]  # cluster name (or "load driver") -> its load
    host_cpus: int | None = None


class PlacedTrial(BaseModel):
    """A trial of a study: its variant, stored facts, and its load while it indexed (None: no host telemetry)."""

    variant: str
    info: TrialInfo
    load: TrialLoad | None = None


def task_window(samples: pd.DataFrame, task: str) -> tuple[float, float] | None:
    """(first scheduled start, last completion) of a task's requests, epoch seconds; None without samples."""
    if samples.empty or "task" not in samples:
        return None
    rows = samples[samples["task"] == task]
    if rows.empty:
        return None
    return float(rows["absolute_time"].min()), float((rows["absolute_time"] + rows["latency"]).max())


def _mean_in(s: pd.DataFrame, start: float, end: float) -> float | None:
    inside = s[(s["timestamp"] > start) & (s["timestamp"] <= end)]["value"]
    return float(inside.mean()) if not inside.empty else None


def _growth(s: pd.DataFrame, start: float, end: float) -> float | None:
    """How much a counter grew over the window: from the last reading at or before its start (else the first in
    it) to the last reading at or before its end."""
    s = s.sort_values("timestamp")
    before = s[s["timestamp"] <= start]
    base = before.iloc[-1] if not before.empty else (s[s["timestamp"] >= start].iloc[0] if
                                                     not s[s["timestamp"] >= start].empty else None)
    upto = s[s["timestamp"] <= end]
    if base is None or upto.empty or float(upto.iloc[-1]["timestamp"]) <= float(base["timestamp"]):
        return None
    return float(upto.iloc[-1]["value"]) - float(base["value"])


def window_load(telemetry: pd.DataFrame, start: float, end: float, host_cpus: int | None) -> TrialLoad | None:
    """Each cluster's node processes and the load driver over [start, end], from the host device's rows; None
    when the trial has none (raced without ``--telemetry host``)."""
    if telemetry.empty:
        return None
    rows = telemetry[telemetry["device"] == HOST_DEVICE]
    if rows.empty:
        return None
    loads: dict[str, ProcessLoad] = {}
    for (cluster, node), g in rows.groupby(["cluster", "node"], sort=False):
        if cluster == HOST_DEVICE or (cluster == "driver" and node != "all"):
            continue
        name = DRIVER if cluster == "driver" else str(cluster)
        cpu = _mean_in(g[g["metric"] == "process.cpu.percent"], start, end)
        written = g[g["metric"] == "process.write_bytes"]
        wrote = _growth(written, start, end) if not written.empty else None
        load = loads.setdefault(name, ProcessLoad())
        if cpu is not None:
            load.cores = (load.cores or 0.0) + cpu / 100.0
        if wrote is not None:
            load.write_bytes = (load.write_bytes or 0.0) + wrote
    return TrialLoad(loads=loads, host_cpus=host_cpus) if loads else None


# -- where ----------------------------------------------------------------------------------------------------


def _gib(b: Any) -> str:
    return f", {b / 2**30:.0f} GiB" if isinstance(b, (int, float)) else ""


def _cpu_sets(info: TrialInfo) -> dict[str, str]:
    """name -> its CPU set text, for what was pinned (a cluster's nodes as one set when they share one)."""
    out: dict[str, str] = {}
    for c in info.clusters:
        sets = c.get("cpus")
        if isinstance(sets, dict) and sets:
            values = sorted({str(v) for v in sets.values()})
            out[str(c.get("name"))] = values[0] if len(values) == 1 else " / ".join(values)
    if info.machine.get("cpus"):
        out[DRIVER] = str(info.machine["cpus"])
    return out


def _cloud_text(info: TrialInfo) -> str:
    parts = [f"{c.get('name')} on {c.get('nodes', '?')} × {c.get('instance_type') or '?'}" for c in info.clusters]
    types = info.machine.get("instance_types") or []
    parts.append(f"the load driver on {len(types)} × {types[0]}" if types and len(set(types)) == 1 else
                 f"the load driver on {', '.join(types)}" if types else "the load driver on its own host")
    return ", ".join(parts) + f" ({info.machine.get('provider') or 'cloud'}): each on machines of its own"


def where_text(info: TrialInfo) -> str:
    """Where one trial's clusters and load driver ran: ``leader, follower and the load driver shared one host
    (vm-1: 2 CPUs, 24 GiB), not pinned``; cloud clusters by instance type."""
    subject, predicate = _where(info)
    return f"{subject} {predicate}" if subject else predicate


def _where(info: TrialInfo) -> tuple[str, str]:
    """(who, where): ``leader, follower and the load driver``, ``shared one host (...), not pinned``; who is empty
    when where names every cluster itself."""
    if any(c.get("instance_type") for c in info.clusters):
        links = trial_links(info)
        return "", _cloud_text(info) + ("; " + ", ".join(_configured(k) for k in links) if links else "")
    m = info.machine
    driver_id = m.get("machine_id") or m.get("hostname")
    names = [str(c.get("name")) for c in info.clusters]
    hosted = [c for c in info.clusters if isinstance(c.get("host"), dict)]
    unknown = [str(c.get("name")) for c in info.clusters if not isinstance(c.get("host"), dict)]
    ids = {c["host"].get("machine_id") or c["host"].get("hostname") for c in hosted}
    if not hosted:
        links = trial_links(info)
        return "", (f"{', '.join(names) or 'the cluster'} not started by bench (host not recorded); the load driver "
                    f"on {m.get('hostname', '?')} ({m.get('cpu_count', '?')} CPUs{_gib(m.get('memory_bytes'))})"
                    + ("; " + ", ".join(_configured(k) for k in links) if links else ""))
    subject = ""
    if ids == {driver_id} and not unknown:
        subject = f"{', '.join(names)} and the load driver"
        text = (f"shared one host ({m.get('hostname', '?')}: {m.get('cpu_count', '?')} "
                f"CPUs{_gib(m.get('memory_bytes'))})")
    else:
        hosts = "; ".join(f"{c.get('name')} on {c['host'].get('hostname', '?')} ({c['host'].get('cpu_count', '?')} "
                          f"CPUs)" for c in hosted)
        text = hosts + f"; the load driver on {m.get('hostname', '?')} ({m.get('cpu_count', '?')} CPUs)"
        if unknown:
            text += f"; {', '.join(unknown)}: host not recorded"
    links = trial_links(info)
    if links:
        text += "; " + ", ".join(_configured(k) for k in links)
    sets = _cpu_sets(info)
    if sets:
        text += ", pinned: " + ", ".join(f"{n} CPU {s}" for n, s in sets.items())
        unpinned = [n for n in [*names, DRIVER] if n not in sets]
        text += f" ({', '.join(unpinned)} unpinned)" if unpinned else ""
    elif m.get("pinning"):
        text += f", not pinned ({m['pinning'].removeprefix('CPU pinning off: ')})"
    else:
        text += ", not pinned"
    return subject, text


# -- links between clusters ------------------------------------------------------------------------------------


def trial_links(info: TrialInfo) -> list[dict[str, Any]]:
    """The links a trial's clusters connected through (bench/cloud/local_links.py stores them per cluster)."""
    return [k for c in info.clusters for k in (c.get("links") or []) if isinstance(k, dict)]


def _configured(link: dict[str, Any]) -> str:
    """``follower->leader over bench's emulated link (rtt 50 ms, rate unlimited)``: what the race asked for; a
    cloud's link, which nothing shapes, with what bench measured of it."""
    name = f"{link.get('from')}->{link.get('to')}"
    if link.get("kind") == "emulated":
        return f"{name} over bench's emulated link (rtt {link.get('rtt_ms', 0):g} ms, rate {link.get('rate')})"
    m = link.get("measured")
    if link.get("kind") == "measured" and isinstance(m, dict):
        return f"{name} over the network between their hosts (measured before the race: {_measured([link])})"
    return f"{name} over the real network"


def _measured(links: list[dict[str, Any]]) -> str:
    """Mean over the given links (one per trial) of bench's measurements of them."""
    rtts = [m["rtt_ms"] for k in links if isinstance(m := k.get("measured"), dict) and m.get("rtt_ms") is not None]
    bps = [m["throughput_bps"] for k in links
           if isinstance(m := k.get("measured"), dict) and m.get("throughput_bps") is not None]
    added = [m["added_rtt_ms"] for k in links
             if isinstance(m := k.get("measured"), dict) and m.get("added_rtt_ms") is not None]
    parts = [f"round trip {sum(rtts) / len(rtts):.1f} ms"] if rtts else ["round trip not measured"]
    if added and len(added) == len(rtts):
        parts[0] += f" ({sum(added) / len(added):.1f} ms more than without the link)"
    if bps:
        parts.append(f"{sum(bps) / len(bps) / 1e6:.1f} Mbit/s")
    return ", ".join(parts)


def links_text(infos: list[TrialInfo]) -> str:
    """Each link of the trials as bench measured it before the race (mean over the trials), or ""."""
    by_link: dict[str, list[dict[str, Any]]] = {}
    for info in infos:
        for k in trial_links(info):
            by_link.setdefault(f"{k.get('from')}->{k.get('to')}", []).append(k)
    return "; ".join(f"{name} {_measured(links)}" for name, links in by_link.items())


# -- the line -------------------------------------------------------------------------------------------------


def _size(b: float) -> str:
    value, unit = rescale(b, "B")
    return f"{compact(value)} {unit}"


def _load_text(loads: list[TrialLoad]) -> str:
    """Mean over the trials of each cluster's cores and writes; the share of the host's CPUs where known."""
    names = list(dict.fromkeys(n for tl in loads for n in tl.loads))
    names.sort(key=lambda n: n == DRIVER)  # the driver last
    cpus = {tl.host_cpus for tl in loads}
    host_cpus = next(iter(cpus)) if len(cpus) == 1 else None
    parts = []
    for n in names:
        of_n = [tl.loads[n] for tl in loads if n in tl.loads]
        cores = [x.cores for x in of_n if x.cores is not None]
        writes = [x.write_bytes for x in of_n if x.write_bytes is not None]
        bits = []
        if cores:
            c = sum(cores) / len(cores)
            share = f" = {100 * c / host_cpus:.0f} % of the host's {host_cpus} CPUs" if host_cpus else ""
            bits.append(f"{c:.2f} cores{share}")
        if writes and n != DRIVER:
            bits.append(f"{_size(sum(writes) / len(writes))} written")
        parts.append(f"{n} " + (", ".join(bits) if bits else "not measured"))
    return "; ".join(parts)


def placement_line(trials: list[PlacedTrial]) -> str:
    """One line for a study or a comparison: where (grouped by variant when the variants ran differently), then,
    per variant, the node processes' CPU and disk writes during its indexing task (mean over its trials)."""
    if not trials:
        return "Placement: no trial."
    # where -> who -> variants: variants whose clusters ran alike share one clause, naming each one's clusters
    by_where: dict[str, dict[str, list[str]]] = {}
    for t in trials:
        who, where = _where(t.info)
        variants = by_where.setdefault(where, {}).setdefault(who, [])
        if t.variant not in variants:
            variants.append(t.variant)
    clauses = []
    for where, whos in by_where.items():
        if len(whos) == 1:
            who, variants = next(iter(whos.items()))
            clause = f"{who} {where}".strip()
            clauses.append(clause if len(by_where) == 1 else f"{', '.join(variants)}: {clause}")
        else:  # the same host and pinning, other clusters per variant
            named = "; ".join(f"{', '.join(v)}: {who.removesuffix(' and the load driver')}" for who, v in whos.items())
            clauses.append(f"every race's clusters ({named}) and its load driver {where}")
    line = "Placement: " + "; ".join(clauses) + "."
    variants = list(dict.fromkeys(t.variant for t in trials))
    measured = []
    for v in variants:
        loads = [t.load for t in trials if t.variant == v and t.load is not None]
        if loads:
            measured.append(f"{v} ({len(loads)} trial{'s' if len(loads) != 1 else ''}): {_load_text(loads)}")
    linked = [(v, text) for v in variants if (text := links_text([t.info for t in trials if t.variant == v]))]
    if linked:
        line += " Links as bench measured them before each race: " + " | ".join(f"{v}: {t}" for v, t in linked) + "."
    if measured:
        line += " While each variant indexed (host telemetry, node processes): " + " | ".join(measured) + "."
    else:
        line += " No per-process CPU or disk was recorded (race with --telemetry host to see what they shared)."
    return line
