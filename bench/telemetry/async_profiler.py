"""async-profiler as the ``profile`` device's sampler (``profile-sampler: async-profiler``).

The library comes from Maven Central (``tools.profiler:async-profiler``, one jar holding ``libasyncProfiler.so``
per platform), downloaded and checked against Maven's published SHA-1 as distributions are
(``bench.provision.distribution.download_verified``) and cached under ``<cache>/tools/``. It is loaded into each
running node with ``jcmd <pid> JVMTI.agent_load`` -- the attach path JFR's ``jcmd JFR.start`` takes, so the same
nodes can be profiled -- and told to write JFR format, which ``JfrCollapse.java`` reads as it reads JFR's own
execution samples. It samples each thread's CPU time (``event=ctimer``: per-thread CPU timers, no perf_events
permission needed) with native and JVM frames, where JFR samples only threads running Java code.
"""

from __future__ import annotations

import os
import platform
import shutil
import tempfile
import zipfile
from pathlib import Path

import psutil

from bench.provision.distribution import download_verified
from bench.telemetry.device import TelemetryError
from bench.telemetry.jvm import jcmd
from bench.util.errors import ConfigError, ProvisionError
from bench.util.file_lock import part_path
from bench.util.home import cache_home

VERSION = "4.6"
URL = "https://repo1.maven.org/maven2/tools/profiler/async-profiler/{v}/async-profiler-{v}.jar"
_ARCH = {"x86_64": "linux-x64", "amd64": "linux-x64", "aarch64": "linux-arm64", "arm64": "linux-arm64"}


def _member() -> str:
    arch = _ARCH.get(platform.machine().lower())
    if platform.system() != "Linux" or arch is None:
        raise ConfigError(f"telemetry device profile: async-profiler's Maven jar has no library for "
                          f"{platform.system()} {platform.machine()}; use profile-sampler:jfr")
    return f"{arch}/libasyncProfiler.so"


def library(version: str = VERSION) -> Path:
    """The cached ``libasyncProfiler.so`` of this machine's platform, from the jar downloaded (and checked against
    Maven's SHA-1, as distributions are) the first time."""
    member = _member()
    folder = cache_home() / "tools" / f"async-profiler-{version}"
    lib = folder / member
    if lib.is_file():
        return lib
    url = URL.format(v=version)
    try:
        jar = download_verified(url, folder / f"async-profiler-{version}.jar", "sha1")
    except ProvisionError as e:
        raise ConfigError(f"telemetry device profile: {e} (or use profile-sampler:jfr, which needs no download)") from None
    lib.parent.mkdir(parents=True, exist_ok=True)
    unpacked = part_path(lib)  # renamed into place whole: a bench beside this one never reads half a library
    try:
        with zipfile.ZipFile(jar) as archive, archive.open(member) as src, open(unpacked, "wb") as dst:
            shutil.copyfileobj(src, dst)
        unpacked.rename(lib)
    except (KeyError, zipfile.BadZipFile) as e:
        raise ConfigError(f"telemetry device profile: {jar} holds no {member}: {e}") from None
    finally:
        unpacked.unlink(missing_ok=True)
    return lib


def staged(lib: Path, version: str = VERSION) -> Path:
    """A copy of the library that the node's user can read (bench's cache may not be reachable for it), at one path
    per version and bench user: a JVM that loads the same path again gets the copy it already has (a second path
    would load a second profiler into it), and a copy is never rewritten in place (a JVM may have it mapped)."""
    folder = Path("/var/tmp" if os.path.isdir("/var/tmp") else tempfile.gettempdir()) / f"bench-async-profiler-{version}-{os.geteuid()}"
    folder.mkdir(mode=0o755, exist_ok=True)
    if folder.stat().st_uid != os.geteuid():
        raise ConfigError(f"{folder} belongs to another user; remove it, then race again")
    folder.chmod(0o755)
    copy = folder / lib.name
    if not copy.is_file() or copy.stat().st_size != lib.stat().st_size:
        part = part_path(copy)
        shutil.copyfile(lib, part)
        part.chmod(0o644)
        part.rename(copy)
    return copy


async def _agent(proc: psutil.Process, lib: Path, command: str) -> None:
    # quoted: jcmd's argument parser would otherwise take the text before the first "=" as an option's name
    out = await jcmd(proc, "JVMTI.agent_load", str(lib), f'"{command}"')
    # jcmd exits 0 whatever the agent said; the agent's own answer is "return code: N"
    if "return code: 0" not in out:
        raise TelemetryError(f"async-profiler {command.split(',')[0]} in JVM {proc.pid}: {' '.join(out.split())[:300]}"
                             + ("; start the node with -XX:+EnableDynamicAgentLoading"
                                if "dynamic" in out.lower() else ""))


async def start(proc: psutil.Process, lib: Path, file: Path, interval_ms: float) -> None:
    await _agent(proc, lib, f"start,event=ctimer,interval={int(interval_ms * 1_000_000)},jfr,file={file}")


async def stop(proc: psutil.Process, lib: Path, file: Path) -> None:
    await _agent(proc, lib, f"stop,file={file}")
