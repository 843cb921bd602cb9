"""A wheel of the bench that is running here, so a driver host installs exactly the orchestrator's code and
data (``pip install <wheel>``), however this bench was installed.

From a source tree (a checkout, installed editable or on PYTHONPATH) the wheel is built with pip; from a
regular install the installed distribution's files (its RECORD) are packed again into a wheel.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

from packaging.version import Version
from wheel.wheelfile import WheelFile

import bench
from bench.util.errors import ProvisionError

# Written by the installer, not part of what was built (pip writes them again on the host); scripts outside
# site-packages (../../bin/bench) are made again from entry_points.txt.
_INSTALLER_FILES = frozenset({"RECORD", "INSTALLER", "REQUESTED", "direct_url.json"})


def build_wheel(dest: Path) -> Path:
    """Write a wheel of the running bench into ``dest``; returns its path."""
    dest.mkdir(parents=True, exist_ok=True)
    root = source_tree()
    return _build_from_source(root, dest) if root else _repack_installed(dest)


def source_tree() -> Path | None:
    """The checkout bench is imported from (bench's pyproject.toml beside the package), or None when bench was
    installed from a wheel. Only building a wheel needs the checkout; bench's data comes from the package."""
    root = Path(bench.__file__).resolve().parent.parent
    try:
        project = tomllib.loads((root / "pyproject.toml").read_text()).get("project", {})
    except (OSError, tomllib.TOMLDecodeError):
        return None
    return root if project.get("name") == "bench" else None


def _build_from_source(root: Path, dest: Path) -> Path:
    """pip wheel of a copy of the package: building in the checkout itself would leave build/ and *.egg-info
    there, and setuptools' build/lib keeps files deleted from the source, which would then ship."""
    with tempfile.TemporaryDirectory(prefix="bench-wheel-src-") as tmp:
        src = Path(tmp)
        # symlinks=False: bench/_data/<name> are links to the checkout's top-level folders; the copy holds the files.
        shutil.copytree(root / "bench", src / "bench", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        for name in ("pyproject.toml", "README.md"):  # README.md: the project's readme (its metadata)
            shutil.copy2(root / name, src / name)
        cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--disable-pip-version-check", "-q",
               "-w", str(dest), str(src)]
        if _has_build_tools():  # else pip gets setuptools from the package index into an isolated build env
            cmd.insert(-1, "--no-build-isolation")
        done = subprocess.run(cmd, capture_output=True, text=True)
    wheels = sorted(dest.glob("bench-*.whl"))
    if done.returncode != 0 or not wheels:
        tail = (done.stderr or done.stdout).strip().replace("\n", " | ")[-500:]
        raise ProvisionError(f"building a wheel of bench from {root} failed (exit {done.returncode}): {tail}")
    return wheels[-1]


def _has_build_tools() -> bool:
    """setuptools new enough for pyproject.toml's build (build-system.requires) is importable here."""
    if importlib.util.find_spec("setuptools") is None:
        return False
    return Version(importlib.metadata.version("setuptools")) >= Version("68")


def _repack_installed(dest: Path) -> Path:
    """The installed distribution's own files (RECORD) in a wheel named after its dist-info and WHEEL tag."""
    dist = importlib.metadata.distribution("bench")
    here = Path(bench.__file__).resolve()
    if Path(str(dist.locate_file("bench/__init__.py"))).resolve() != here or not dist.files:
        raise ProvisionError(f"cannot make a wheel of the bench at {here.parent}: it is neither a checkout (no "
                             "pyproject.toml beside it) nor the installed distribution bench; install bench with pip")
    files = [f for f in dist.files if ".." not in f.parts and "__pycache__" not in f.parts
             and not (f.parts[0].endswith(".dist-info") and f.name in _INSTALLER_FILES)]
    info = next(f.parts[0] for f in files if f.parts[0].endswith(".dist-info"))
    wheel_meta = dist.read_text("WHEEL")
    if wheel_meta is None:
        raise ProvisionError(f"cannot make a wheel of the bench at {here.parent}: its {info} has no WHEEL file; "
                             "install bench with pip")
    tag = next(line.split(":", 1)[1].strip() for line in wheel_meta.splitlines() if line.startswith("Tag:"))
    path = dest / f"{info.removesuffix('.dist-info')}-{tag}.whl"
    with WheelFile(path, "w") as whl:
        # The dist-info last, as wheels have it (WheelFile adds RECORD when it closes).
        for f in sorted(files, key=lambda f: (f.parts[0].endswith(".dist-info"), str(f))):
            whl.write(str(dist.locate_file(f)), f.as_posix())
    return path
