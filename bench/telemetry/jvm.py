"""Rally's JVM devices, and talking to a node's JVM.

``jfr``, ``jit`` and ``gc`` are JVM options of the nodes bench starts (Rally's options for Java 9+, ``jit`` without
``PrintAssembly``; the files in
each node's log folder, which is kept with the trial); ``heapdump`` takes a heap dump of every node when the schedule
ended (``jcmd <pid> GC.heap_dump``, Rally runs ``jmap`` then). ``jcmd`` is the JDK's own tool, beside the ``java``
the node runs, run as the node's user (the attach API accepts only the JVM's own user).
"""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
from pathlib import Path
from typing import Any

import psutil

from bench.http.client import ClusterTarget
from bench.provision.model import NODE_LOGS
from bench.telemetry.config import TelemetryConfig
from bench.telemetry.device import TelemetryError
from bench.telemetry.host import discover_node_pids
from bench.util.redact import redact_text

log = logging.getLogger(__name__)

# Devices that are nothing but JVM options at the node's boot: they work wherever bench boots the node.
BOOT_DEVICES = ("jfr", "jit", "gc")
LOGS_PROPERTY = "-Dbench.node.logs="  # on the node's command line: where its log folder is (heapdump)
JCMD_TIMEOUT = 300.0


def jvm_options(config: TelemetryConfig) -> list[str]:
    """The JVM options of the chosen JVM devices, as Rally writes them for Java 9 and later."""
    p = config.params
    out: list[str] = []
    if "jfr" in config.devices:
        jfr = f"-XX:StartFlightRecording=maxsize=0,maxage=0s,disk=true,dumponexit=true,filename={NODE_LOGS}/profile.jfr"
        for key, option in (("jfr-delay", "delay"), ("jfr-duration", "duration"), ("recording-template", "settings")):
            if p.get(key):
                jfr += f",{option}={p[key]}"
        out += ["-XX:+UnlockDiagnosticVMOptions", "-XX:+DebugNonSafepoints", jfr]
    if "jit" in config.devices:
        # Rally's options without -XX:+PrintAssembly: without the hsdis library it prints every compiled method as
        # hex to the console, and a node did not start within 120 s here with it (2026-11-26).
        out += ["-XX:+UnlockDiagnosticVMOptions", "-Xlog:class+load=info", "-XX:+LogCompilation",
                f"-XX:LogFile={NODE_LOGS}/jit.log"]
    if "gc" in config.devices:
        out.append(f"-Xlog:{p.get('gc-log-config') or 'gc*=info,safepoint=info,age*=trace'}:file={NODE_LOGS}/gc.log:"
                   "utctime,uptimemillis,level,tags:filecount=0")
    if "heapdump" in config.devices:
        out.append(f"{LOGS_PROPERTY}{NODE_LOGS}")
    return list(dict.fromkeys(out))  # an option two devices need is given once


async def local_jvms(targets: list[ClusterTarget], timeout: float = 10.0) -> dict[tuple[str, str], psutil.Process]:
    """(cluster, node) -> the node's server JVM, for the nodes of these clusters that run on this machine."""
    out: dict[tuple[str, str], psutil.Process] = {}
    for t in targets:
        for node, pid in (await discover_node_pids(t, timeout)).items():
            try:
                out[(t.name, node)] = psutil.Process(pid)
            except psutil.Error:
                continue
    return out


def jdk_tool(proc: psutil.Process, tool: str) -> Path:
    """A tool of the JDK a JVM runs on (``jcmd``, ``java``), beside its ``java``."""
    try:
        path = Path(proc.exe()).parent / tool
    except psutil.Error as e:
        raise TelemetryError(f"cannot read the executable of pid {proc.pid}: {e}") from None
    if not path.is_file():
        raise TelemetryError(f"the JVM of pid {proc.pid} runs {proc.exe()}, a runtime without {tool} "
                             "(a JDK is needed for this device)")
    return path


def as_owner(proc: psutil.Process) -> dict[str, Any]:
    """subprocess keyword arguments that run a child as the JVM's own user (the attach API refuses others)."""
    try:
        uid, gid = proc.uids().effective, proc.gids().effective
    except psutil.Error:
        return {}
    return {} if uid == os.geteuid() else {"user": uid, "group": gid, "extra_groups": []}


def jcmd_sync(proc: psutil.Process, *command: str, timeout: float = JCMD_TIMEOUT) -> str:
    tool = jdk_tool(proc, "jcmd")
    try:
        res = subprocess.run([str(tool), str(proc.pid), *command], capture_output=True, text=True, timeout=timeout,
                             check=False, stdin=subprocess.DEVNULL, **as_owner(proc))
    except (OSError, subprocess.TimeoutExpired) as e:
        raise TelemetryError(f"jcmd {proc.pid} {' '.join(command)}: {redact_text(str(e))}") from None
    out = (res.stdout + res.stderr).strip()
    # jcmd exits 0 even when the command failed inside the JVM; its answer says so
    if res.returncode != 0 or "Exception" in out or "Could not" in out or "error" in out.lower().split(":", 1)[0]:
        raise TelemetryError(f"jcmd {proc.pid} {' '.join(command)} failed: {redact_text(' '.join(out.split())[:300])}")
    return out


async def jcmd(proc: psutil.Process, *command: str, timeout: float = JCMD_TIMEOUT) -> str:
    return await asyncio.to_thread(jcmd_sync, proc, *command, timeout=timeout)


def node_logs(proc: psutil.Process) -> Path | None:
    """The node's log folder, from the property ``heapdump`` puts on its command line."""
    try:
        args = proc.cmdline()
    except psutil.Error:
        return None
    return next((Path(a.removeprefix(LOGS_PROPERTY)) for a in args if a.startswith(LOGS_PROPERTY)), None)


async def heap_dumps(targets: list[ClusterTarget]) -> list[str]:
    """A heap dump of every local node started with ``heapdump``'s property; one line per dump or failure."""
    lines: list[str] = []
    for (cluster, node), proc in (await local_jvms(targets)).items():
        logs = node_logs(proc)
        if logs is None:
            continue
        target = logs / f"heap_at_exit_{proc.pid}.hprof"
        try:
            await jcmd(proc, "GC.heap_dump", str(target))
            lines.append(f"heapdump: node {node} of cluster {cluster}: {target.name} (kept with the trial's logs)")
        except TelemetryError as e:
            lines.append(f"heapdump: node {node} of cluster {cluster}: {e}")
    return lines
