"""The optional parts of bench (``pyproject.toml``'s extras): a core install runs a race and prints a markdown
report without any of them, and each feature that needs one says which ``pip install`` brings it, in one line.

"Without" is made real in the processes these tests start: a ``sitecustomize`` first on their path
(``tests/support/without_extras``) makes the optional packages' imports fail as they do where they are not installed."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.util.extras import EXTRAS
from benchmarks.nullsink import running
from tests.support.checkout import ROOT

# The import names of every optional package (what a core install lacks).
HIDDEN = ("boto3", "botocore", "google.cloud", "paramiko", "plotly", "kaleido", "ruptures", "h5py", "ray", "wheel")


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~\[; ]", requirement, maxsplit=1)[0].lower()


def test_the_extras_bench_names_are_the_ones_pyproject_declares() -> None:
    declared = _pyproject()["project"]["optional-dependencies"]
    for extra, packages in EXTRAS.items():
        assert extra in declared, f"bench names the extra {extra!r}, which pyproject.toml does not declare"
        assert sorted(_name(r) for r in declared[extra]) == sorted(packages), extra
    assert set(declared["all"][0].split("[")[1].rstrip("]").split(",")) == set(EXTRAS)


def test_the_core_install_requires_none_of_the_optional_packages() -> None:
    core = {_name(r) for r in _pyproject()["project"]["dependencies"]}
    optional = {p for packages in EXTRAS.values() for p in packages}
    assert not core & optional, f"required by the core install: {sorted(core & optional)}"


@pytest.fixture(scope="module")
def sink() -> Iterator[str]:
    with running() as hostport:
        yield hostport


def _bench(home: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    path = os.pathsep.join([str(ROOT / "tests" / "support" / "without_extras"), *filter(None, [os.environ.get("PYTHONPATH")])])
    env = {**os.environ, "BENCH_HOME": str(home), "PYTHONPATH": path, "BENCH_TEST_HIDDEN_MODULES": ",".join(HIDDEN),
           "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", "bench", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout)


def _track(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "track.json").write_text(json.dumps({
        "version": 2, "description": "a short search loop", "indices": [{"name": "i"}],
        "schedule": [{"operation": {"name": "search", "operation-type": "search", "index": "i",
                                    "body": {"query": {"match_all": {}}}},
                      "clients": 2, "iterations": 50}]}))
    return folder


@pytest.fixture(scope="module")
def raced(sink: str, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A race run by a core install, and its trial id."""
    home = tmp_path_factory.mktemp("core-home")
    track = _track(tmp_path_factory.mktemp("track"))
    trial = uuid.uuid4().hex
    done = _bench(home, "--quiet", "race", f"--track-path={track}", f"--target-hosts={sink}", f"--race-id={trial}")
    assert done.returncode == 0, done.stderr
    return home, trial


def _one_line(done: subprocess.CompletedProcess[str], extra: str) -> str:
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode != 0 and len(lines) == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert f"pip install 'bench[{extra}]'" in lines[0], lines[0]
    return lines[0]


def test_a_core_install_races_and_prints_a_markdown_report(raced: tuple[Path, str]) -> None:
    home, trial = raced
    done = _bench(home, "report", trial)
    assert done.returncode == 0, done.stderr
    assert "search" in done.stdout and "|" in done.stdout  # the summary's markdown table


def test_an_html_report_without_the_plots_extra_is_one_line(raced: tuple[Path, str], tmp_path: Path) -> None:
    home, trial = raced
    line = _one_line(_bench(home, "report", trial, "--format=html", f"--output={tmp_path / 'r.html'}"), "plots")
    assert "plotly" in line
    assert not (tmp_path / "r.html").exists()


def test_a_cloud_topology_without_the_cloud_extra_is_one_line(tmp_path: Path) -> None:
    track = _track(tmp_path / "track")
    line = _one_line(_bench(tmp_path / "home", "race", f"--topology={ROOT / 'topologies' / 'ccr-aws.yml'}",
                            f"--track-path={track}"), "cloud")
    assert "paramiko" in line and "ccr-aws" in line


def test_change_points_without_the_history_extra_are_one_line() -> None:
    code = ("from bench.reporting.changepoints import change_points\n"
            "change_points([1.0, 1.0, 1.0, 2.0, 2.0, 2.0])\n")
    path = os.pathsep.join([str(ROOT / "tests" / "support" / "without_extras"), str(ROOT)])
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": path, "BENCH_TEST_HIDDEN_MODULES": ",".join(HIDDEN)})
    assert "ConfigError" in done.stderr and "pip install 'bench[history]'" in done.stderr, done.stderr


def test_a_vector_data_set_without_the_vector_extra_is_one_line(tmp_path: Path) -> None:
    data = tmp_path / "glove.hdf5"
    data.write_bytes(b"\x89HDF\r\n\x1a\n")
    code = ("import sys\nfrom bench.driver.vector_data import VectorDataSet\n"
            f"VectorDataSet('hdf5', {str(data)!r}, 'neighbors')\n")
    path = os.pathsep.join([str(ROOT / "tests" / "support" / "without_extras"), str(ROOT)])
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": path, "BENCH_TEST_HIDDEN_MODULES": ",".join(HIDDEN)})
    assert "pip install 'bench[vector]'" in done.stderr, done.stderr
