"""A track's ``dependencies``: installed for real with pip into ``<bench home>/libs`` (needs PyPI), importable by
track.py in the loading process and in a spawned worker, not reinstalled, refused with the pip command offline,
one line with the log file when pip fails."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from bench.cli import main
from bench.track import dependencies
from bench.track.loader import load_track
from bench.util.errors import TrackError

# A tiny pure-Python package bench's environment does not have (checked below, so the test cannot pass by accident).
PACKAGE, MODULE = "tomli-w==1.0.0", "tomli_w"

TRACK_PY = f"""
import {MODULE}


def source(track, params, **kwargs):
    return {{"body": {{"query": {{"match_all": {{}}}}}}, "origin": {MODULE}.__file__}}


def register(registry):
    registry.register_param_source("from-dependency", source)
"""


@pytest.fixture
def clean_import_state(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(sys, "path", list(sys.path))
    yield
    sys.modules.pop(MODULE, None)


def _track(folder: Path, deps: list[str], track_py: str | None = TRACK_PY) -> Path:
    folder.mkdir(parents=True)
    task = {"operation": {"operation-type": "search", "param-source": "from-dependency"}} if track_py else \
        {"operation": "refresh"}
    (folder / "track.json").write_text(json.dumps({"version": 2, "indices": [{"name": "i"}], "dependencies": deps,
                                                   "schedule": [task]}))
    if track_py:
        (folder / "track.py").write_text(track_py)
    return folder


def test_a_dependency_is_installed_into_the_bench_home_and_imported_by_track_py(tmp_path, bench_home,
                                                                                clean_import_state):
    with pytest.raises(ModuleNotFoundError):
        __import__(MODULE)
    folder = _track(tmp_path / "t", [PACKAGE])
    track = load_track(folder, {}, check_challenge=True)
    libs = bench_home / "libs"
    assert track.dependencies == [PACKAGE]
    assert (libs / MODULE / "__init__.py").is_file()
    module = sys.modules[MODULE]
    assert Path(module.__file__).is_relative_to(libs)
    log = bench_home / "logs" / "dependencies.log"
    assert "Successfully installed tomli-w-1.0.0" in log.read_text()

    # Satisfied now: a second load (and an offline one) runs no pip.
    before = log.read_text()
    assert dependencies.ensure([PACKAGE], folder / "track.json", offline=True) == []
    load_track(folder, {}, check_challenge=True)
    assert log.read_text() == before

    # A spawned process (as the load driver's workers are) imports the track's code through bench.driver.track_code.
    plan = tmp_path / "plan.pickle"
    plan.write_bytes(pickle.dumps(track))
    script = (
        "import pickle, sys\n"
        "from bench.driver.track_code import TrackCode, TrackCodePlan\n"
        f"track = pickle.loads(open({str(plan)!r}, 'rb').read())\n"
        "code = TrackCode(TrackCodePlan(track, None), [], 'default', 1)\n"
        "task = track.challenge(None).tasks()[0]\n"
        "print(next(code.parts(task, 0).source)['origin'])\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                         cwd=Path(__file__).resolve().parents[2])
    assert out.returncode == 0, out.stderr
    assert Path(out.stdout.strip()).is_relative_to(libs)


def test_offline_a_missing_dependency_is_refused_with_the_pip_command(tmp_path, bench_home):
    folder = _track(tmp_path / "t", ["packaging>=20", "surely-not-installed-pkg==1.0"], track_py=None)
    with pytest.raises(TrackError) as e:
        load_track(folder, {}, offline=True)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(str(folder / "track.json"))
    # packaging is in bench's environment: satisfied, so not named
    assert "needs surely-not-installed-pkg==1.0, not installed and --offline forbids installing" in msg
    assert msg.endswith(f"run {sys.executable} -m pip install surely-not-installed-pkg==1.0 --upgrade "
                        f"--target {bench_home / 'libs'}")
    assert not (bench_home / "libs").exists()


def test_bench_info_offline_installs_nothing(tmp_path, bench_home, capsys):
    from bench.cli import main

    folder = _track(tmp_path / "t", ["surely-not-installed-pkg==1.0"], track_py=None)
    assert main(["info", f"--track-path={folder}", "--offline"]) != 0
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err and "--offline forbids installing" in err and "pip install" in err
    assert not (bench_home / "libs").exists()


def test_a_failing_install_is_one_line_with_the_log_file(tmp_path, bench_home, capsys):
    folder = _track(tmp_path / "t", ["surely-not-a-real-package-bench-xyz==1.0"], track_py=None)
    rc = main(["--quiet", "race", f"--track-path={folder}", "--target-hosts=127.0.0.1:1"])
    err = capsys.readouterr().err
    lines = [line for line in err.strip().splitlines() if not line.startswith("bench: installing")]
    assert rc != 0 and "Traceback" not in err and len(lines) == 1, err
    log = bench_home / "logs" / "dependencies.log"
    assert f"installing the track's dependencies surely-not-a-real-package-bench-xyz==1.0 failed (exit code 1): " \
           f"see {log}" in lines[0]
    assert f"the command was: {sys.executable} -m pip install surely-not-a-real-package-bench-xyz==1.0" in lines[0]
    assert "No matching distribution found for surely-not-a-real-package-bench-xyz" in log.read_text()


def test_an_install_that_cannot_reach_its_download_says_so(tmp_path, bench_home, capsys):
    # a URL dependency on a port nothing listens on: pip fails on the connection, not on the package
    folder = _track(tmp_path / "t", ["http://127.0.0.1:1/package-assets-main.tar.gz"], track_py=None)
    rc = main(["--quiet", "race", f"--track-path={folder}", "--target-hosts=127.0.0.1:1"])
    err = capsys.readouterr().err
    lines = [line for line in err.strip().splitlines() if not line.startswith("bench: installing")]
    assert rc != 0 and "Traceback" not in err and len(lines) == 1, err
    assert "failed (exit code 1) because a download could not be reached (" in lines[0], lines[0]


def test_install_output_names_a_network_failure_and_nothing_else():
    assert dependencies.unreachable_download("urllib.error.URLError: <urlopen error [Errno -2] Name or service not known>") == \
        "Name or service not known"
    assert dependencies.unreachable_download("ERROR: No matching distribution found for x==1") is None


def test_requirements_are_checked_against_the_installed_version(tmp_path):
    import importlib.metadata

    file = tmp_path / "track.json"
    have = importlib.metadata.version("packaging")
    assert dependencies.satisfied(f"packaging=={have}", tmp_path, file)
    assert not dependencies.satisfied("packaging<1", tmp_path, file)
    assert not dependencies.satisfied("https://example.invalid/pkg.tar.gz", tmp_path, file)
    assert dependencies.satisfied("packaging; python_version < '3'", tmp_path, file)  # not for this Python
    with pytest.raises(TrackError, match="cannot read the pip requirement 'not a requirement!!'"):
        dependencies.parse(["not a requirement!!"], file)
    with pytest.raises(TrackError, match="dependencies must be a list of pip requirements"):
        dependencies.parse({"numpy": 1}, file)
    assert dependencies.parse("numpy", file) == ["numpy"]


def _wheel(folder: Path, name: str = "benchurlpkg", version: str = "0.1") -> Path:
    """A minimal real wheel (pip installs it without any index)."""
    import zipfile

    folder.mkdir(parents=True, exist_ok=True)
    wheel = folder / f"{name}-{version}-py3-none-any.whl"
    info = f"{name}-{version}.dist-info"
    files = {f"{name}/__init__.py": "VALUE = 42\n",
             f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
             f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: bench-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    with zipfile.ZipFile(wheel, "w") as z:
        for path, text in files.items():
            z.writestr(path, text)
        z.writestr(f"{info}/RECORD", "".join(f"{p},,\n" for p in [*files, f"{info}/RECORD"]))
    return wheel


def test_a_url_dependency_is_passed_to_pip_and_remembered(tmp_path, bench_home, clean_import_state):
    url = _wheel(tmp_path / "wheels").as_uri()
    file = tmp_path / "track.json"
    assert dependencies.ensure([url], file, offline=False) == [url]
    assert (bench_home / "libs" / "benchurlpkg" / "__init__.py").is_file()
    assert __import__("benchurlpkg").VALUE == 42
    assert dependencies.ensure([url], file, offline=True) == []  # remembered: not installed again
    sys.modules.pop("benchurlpkg", None)
