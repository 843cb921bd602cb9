"""A track's ``dependencies`` (Rally's track-level pip requirements), installed as Rally installs them.

Rally runs ``python -m pip install <deps> --upgrade --target <rally home>/libs`` and puts that folder first on
``sys.path`` for track code. bench does the same with ``<bench home>/libs``, but only for requirements that are not
already satisfied there or in bench's own environment, so a second load installs nothing. With ``--offline`` it
never installs: a missing requirement is refused with the exact pip command.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement

from bench.util.errors import TrackError
from bench.util.file_lock import exclusive
from bench.util.home import bench_home, bench_home_path

LIBS = "libs"
# URL requirements carry no name/version to check: the ones installed are remembered here (inside libs, so
# deleting libs forgets them too).
_URL_RECORD = ".bench-url-requirements.json"
INSTALL_TIMEOUT_S = 1800


def libs_dir() -> Path:
    """Where track dependencies go (not created)."""
    return bench_home_path() / LIBS


def log_file() -> Path:
    return bench_home() / "logs" / "dependencies.log"


def parse(spec: Any, file: Path) -> list[str]:
    """The track's ``dependencies`` as a list of pip requirements (a single string is one requirement)."""
    if spec is None:
        return []
    deps = [spec] if isinstance(spec, str) else spec
    if not isinstance(deps, list) or not all(isinstance(d, str) and d.strip() for d in deps):
        raise TrackError(f"{file}: dependencies must be a list of pip requirements, got {spec!r}")
    for d in deps:
        if not _is_url(d):
            _requirement(d, file)
    return [d.strip() for d in deps]


def _is_url(dep: str) -> bool:
    return "://" in dep and "@" not in dep.split("://", 1)[0]


def _requirement(dep: str, file: Path) -> Requirement:
    try:
        return Requirement(dep)
    except InvalidRequirement:
        raise TrackError(f"{file}: dependencies: cannot read the pip requirement {dep!r}") from None


def _installed_version(name: str, libs: Path) -> str | None:
    """The version Python would import: the libs folder comes first on sys.path, so a copy there wins."""
    for dist in importlib.metadata.distributions(path=[str(libs)]):
        if _canonical(dist.metadata["Name"] or "") == _canonical(name):
            return dist.version
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def _canonical(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def _recorded_urls(libs: Path) -> set[str]:
    try:
        return set(json.loads((libs / _URL_RECORD).read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError):
        return set()


def satisfied(dep: str, libs: Path, file: Path) -> bool:
    """Whether ``dep`` is installed (in ``libs`` or bench's environment) in a version it accepts."""
    if _is_url(dep):
        return dep in _recorded_urls(libs)
    req = _requirement(dep, file)
    if req.marker is not None and not req.marker.evaluate():
        return True  # not for this Python/platform: pip would skip it too
    if req.url:
        return dep in _recorded_urls(libs)
    version = _installed_version(req.name, libs)
    return version is not None and (not req.specifier or req.specifier.contains(version, prereleases=True))


# What pip (or a package's own build, fetching sources) prints when a host cannot be reached.
_NETWORK = re.compile(r"Name or service not known|Temporary failure in name resolution|Could not resolve host|"
                      r"Network is unreachable|No route to host|Connection refused|Failed to establish a new "
                      r"connection|ConnectTimeoutError|Max retries exceeded")


def unreachable_download(output: str) -> str | None:
    """The network failure in an install's output, if it failed on one (so the user is told it is the network,
    not the track)."""
    m = _NETWORK.search(output)
    return m.group(0) if m else None


def _tail(log: Path, start: int) -> str:
    try:
        with open(log, "rb") as f:
            f.seek(start)
            return f.read(1 << 20).decode("utf-8", "replace")
    except OSError:
        return ""


def pip_command(deps: list[str], libs: Path) -> list[str]:
    return [sys.executable, "-m", "pip", "install", *deps, "--upgrade", "--target", str(libs)]


def activate() -> None:
    """Put the libs folder first on sys.path (as Rally does), once."""
    libs = str(libs_dir())
    if libs not in sys.path:
        sys.path.insert(0, libs)


def _install_lock(libs: Path) -> contextlib.AbstractContextManager[None]:
    """Two bench processes loading tracks at once must not run pip into the same folder together."""
    return exclusive(libs / ".bench-install.lock", waiting="waiting for another bench installing track dependencies")


def ensure(deps: list[str], file: Path, *, offline: bool) -> list[str]:
    """Install the requirements of ``deps`` that are not satisfied; returns the ones it installed. Makes the
    libs folder importable whenever the track has dependencies."""
    if not deps:
        return []
    libs = libs_dir()
    missing = [d for d in deps if not satisfied(d, libs, file)]
    if missing and offline:
        raise TrackError(f"{file}: the track needs {', '.join(missing)}, not installed and --offline forbids "
                         f"installing: run {shlex.join(pip_command(missing, libs))}")
    if missing:
        _install(missing, libs, file)
    activate()
    importlib.invalidate_caches()
    return missing


def _install(missing: list[str], libs: Path, file: Path) -> None:
    try:
        libs.mkdir(parents=True, exist_ok=True)
        log = log_file()
        log.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise TrackError(f"{file}: cannot create {libs} for the track's dependencies: {e.strerror or e}") from None
    with _install_lock(libs):
        missing = [d for d in missing if not satisfied(d, libs, file)]  # another process may have installed them
        if not missing:
            return
        cmd = pip_command(missing, libs)
        print(f"bench: installing the track's dependencies {', '.join(missing)} into {libs} (log: {log})",
              file=sys.stderr, flush=True)
        with open(log, "ab") as out:
            out.write(f"\n$ {shlex.join(cmd)}\n".encode())
            out.flush()
            start = out.tell()
            try:
                rc = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    timeout=INSTALL_TIMEOUT_S, check=False).returncode
            except subprocess.TimeoutExpired:
                rc = None
        if rc != 0:
            how = f"timed out after {INSTALL_TIMEOUT_S} s" if rc is None else f"failed (exit code {rc})"
            why = unreachable_download(_tail(log, start))
            raise TrackError(f"{file}: installing the track's dependencies {', '.join(missing)} {how}"
                             f"{f' because a download could not be reached ({why})' if why else ''}: see {log}; "
                             f"the command was: {shlex.join(cmd)}")
        urls = [d for d in missing if _is_url(d) or Requirement(d).url]
        if urls:
            record = libs / _URL_RECORD
            record.write_text(json.dumps(sorted(_recorded_urls(libs) | set(urls))), encoding="utf-8")
