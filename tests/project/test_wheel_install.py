"""bench installed from its wheel (what ``pip install .`` or a package index gives), run from a folder that
is not the checkout: its tracks, cars, telemetry profiles and report templates come with the package, a
test-mode race provisions a real Elasticsearch and stores a complete trial, and the HTML report is written
where the user is. The venv gets its dependencies offline from this test environment's own site-packages
(a .pth file, as on the SSH driver host), never from the base interpreter's."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.cloud.ssh import install_command
from bench.cloud.wheel import build_wheel
from tests.support.checkout import ROOT
from tests.support.isolation import leaked

# One of each kind of bundled file, as the checkout has it at the top level.
BUNDLED = ("tracks/nginx/track.json", "tracks/http_logs/challenges/common/setup-schedule.json",
           "car-configs/defaults.yml", "telemetry-profiles/default.yml", "reports/report.html.j2",
           "topologies/ccr-local.yml", "experiments/ccr-overhead.yml")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_wheel(tmp_path_factory.mktemp("wheel"))


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    if sys.prefix == sys.base_prefix:
        pytest.skip("the tests run in a base interpreter, not a venv: its site-packages cannot be lent alone")
    venv = tmp_path_factory.mktemp("installed") / "venv"
    done = subprocess.run(["bash", "-c", install_command(sys.executable, str(venv), str(wheel), offline=True)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    yield venv


def _run(venv: Path, cwd: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """A command of the venv, from cwd, with nothing pointing back at the checkout (no PYTHONPATH)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    return subprocess.run([str(venv / "bin" / args[0]), *args[1:]], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


def test_the_wheel_holds_bench_data_as_files(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as whl:
        entries = {i.filename: i for i in whl.infolist()}
        for rel in BUNDLED:
            info = entries.get(f"bench/_data/{rel}")
            assert info is not None, f"{rel} is not in {wheel.name}"
            assert not stat.S_ISLNK(info.external_attr >> 16), f"{rel} is a link in the wheel"
            assert whl.read(info) == (ROOT / rel).read_bytes()
        assert not [n for n in entries if n.endswith(".pyc") or "__pycache__" in n]
    # Every file of the top-level folders is in the wheel.
    shipped = {n.removeprefix("bench/_data/") for n in entries if n.startswith("bench/_data/")}
    for top in ("tracks", "car-configs", "telemetry-profiles", "reports", "topologies", "experiments"):
        files = {p.relative_to(ROOT).as_posix() for p in (ROOT / top).rglob("*")
                 if p.is_file() and "__pycache__" not in p.parts}
        assert files and files <= shipped, sorted(files - shipped)


@pytest.mark.cluster
@pytest.mark.timeout(600)
def test_installed_bench_lists_races_and_reports_from_another_folder(venv: Path, tmp_path: Path,
                                                                    bench_home: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    probe = _run(venv, elsewhere, "python", "-c",
                 "import bench, json, sys; print(json.dumps([bench.__file__, *sys.path]))")
    module, *path = json.loads(probe.stdout)
    assert Path(module).resolve().is_relative_to(venv.resolve()), module
    assert not Path(module).resolve().is_relative_to(ROOT), module
    # The only folder of the checkout's tree on the path may be the test venv's own site-packages the venv borrows
    # its dependencies from (nox keeps its venvs in the checkout's .nox/); the checkout itself never is.
    lent = Path(sys.prefix).resolve()
    assert not [p for p in path if p and Path(p).resolve().is_relative_to(ROOT)
                and not Path(p).resolve().is_relative_to(lent)], path
    assert not leaked(path), f"the venv sees the base interpreter's site-packages {leaked(path)}"

    tracks = _run(venv, elsewhere, "bench", "list", "tracks")
    assert tracks.returncode == 0, tracks.stderr
    assert {"nginx", "http_logs", "geopoint"} <= {line.split()[0] for line in tracks.stdout.splitlines() if line}
    cars = _run(venv, elsewhere, "bench", "list", "cars")
    assert re.search(r"^defaults\s+car\s", cars.stdout, re.M) and re.search(r"^512mheap\s+mixin", cars.stdout, re.M)
    telemetry = _run(venv, elsewhere, "bench", "list", "telemetry")
    assert re.search(r"^node-stats\s", telemetry.stdout, re.M) and re.search(r"^default\s+node-stats", telemetry.stdout,
                                                                             re.M), telemetry.stdout[-2000:]

    raced = _run(venv, elsewhere, "bench", "race", "--track=nginx", "--test-mode", "--car=defaults,512mheap",
                 timeout=400)
    m = re.search(r"Trial ([0-9a-f]{32}) stored \(complete\)", raced.stdout)
    assert raced.returncode == 0 and m, raced.stdout[-2000:] + raced.stderr[-2000:]
    trial = m.group(1)
    listed = _run(venv, elsewhere, "bench", "list")
    assert re.search(rf"^{trial[:12]}\s.*nginx/append-no-conflicts\s+test\s+complete", listed.stdout, re.M), \
        listed.stdout
    shown = _run(venv, elsewhere, "bench", "show", trial[:10])
    assert shown.returncode == 0 and f"Trial {trial}: nginx/append-no-conflicts, complete" in shown.stdout
    assert re.search(r"^index-append\s", shown.stdout, re.M), shown.stdout

    reported = _run(venv, elsewhere, "bench", "report", trial[:10], "--format=html", timeout=120)
    assert reported.returncode == 0, reported.stderr[-2000:]
    html = (elsewhere / f"bench-report-{trial[:8]}.html").read_text()
    assert "<html" in html.lower() and trial in html and "index-append" in html
    assert sorted(p.name for p in elsewhere.iterdir()) == [f"bench-report-{trial[:8]}.html"]
    assert (bench_home / "bench.db").is_file()  # the trial went to BENCH_HOME, not the folder it ran in


def test_installed_bench_packs_itself_into_the_same_wheel(venv: Path, wheel: Path, tmp_path: Path) -> None:
    """Without a checkout, the wheel for driver hosts is the installed distribution's files packed again."""
    script = ("import sys; from pathlib import Path; from bench.cloud.wheel import build_wheel, source_tree; "
              "assert source_tree() is None; print(build_wheel(Path(sys.argv[1])))")
    done = _run(venv, tmp_path, "python", "-c", script, str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr[-2000:]
    repacked = Path(done.stdout.strip())
    assert repacked.name == wheel.name
    with zipfile.ZipFile(wheel) as a, zipfile.ZipFile(repacked) as b:
        assert set(a.namelist()) == set(b.namelist())
        record = f"{wheel.name.split('-py')[0]}.dist-info/RECORD"
        assert [n for n in a.namelist() if n != record and a.read(n) != b.read(n)] == []
        assert sorted(a.read(record).splitlines()) == sorted(b.read(record).splitlines())


def test_pip_install_without_extras_installs_none_of_the_optional_packages(wheel: Path, tmp_path: Path) -> None:
    """What ``pip install bench`` resolves from the package index: the core dependencies, no extra's package."""
    report = tmp_path / "resolved.json"
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet",
                           "--report", str(report), str(wheel)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    resolved = {item["metadata"]["name"].lower() for item in json.loads(report.read_text())["install"]}
    assert "bench" in resolved and "elasticsearch" in resolved
    optional = {"boto3", "botocore", "google-cloud-compute", "paramiko", "plotly", "kaleido", "ray", "ruptures",
                "h5py"}
    assert not resolved & optional, f"a core install brings {sorted(resolved & optional)}"
