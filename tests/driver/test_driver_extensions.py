"""Operation runners plugged in through the seam (``bench.driver.runners.registry``): an extension registered in-process
runs its operation in a real race in every worker process; what a worker cannot load, what nobody registered and
a second runner for a type are each one clear error."""

from __future__ import annotations

import json
import multiprocessing
import os
from pathlib import Path
from typing import Any

import pytest

from bench import extensions
from bench.cli import main
from bench.driver.runners.core import Context, Result, search
from bench.driver.runners.registry import register_runner, runner_spec
from bench.trials.sqlite import TrialStore
from bench.util.errors import ConfigError, TrackError

pytestmark = pytest.mark.timeout(300)

PROBE = "test-health-probe"
MAIN_ONLY = "test-main-process-only"


async def health_probe(ctx: Context, p: dict[str, Any]) -> Result:
    """A real request, and a line naming the process that sent it (so the test sees which workers ran it)."""
    status, raw = await ctx.cluster(p).send("GET", "/_cluster/health", None)
    with open(p["pid-file"], "a") as f:
        f.write(f"{os.getpid()}\n")
    return Result(unit="probes", status=status, bytes_received=len(raw), success=status < 400)


def check_probe(name: str, op_type: str, params: dict[str, Any], *, track_file: str) -> None:
    if not str(params["pid-file"]).startswith("/"):
        raise TrackError(f"{track_file}: operation '{name}' has pid-file {params['pid-file']!r}: use an absolute path")


def probe_setup() -> None:
    register_runner(PROBE, health_probe, required=("pid-file",), check=check_probe)


def main_only_setup() -> None:
    # An extension that (wrongly) registers its runner only where bench itself runs: its workers lack it.
    if multiprocessing.parent_process() is None:
        register_runner(MAIN_ONLY, health_probe)


@pytest.fixture
def restore_registered(monkeypatch: pytest.MonkeyPatch) -> None:
    # In-process extensions are passed on to every later race's workers: keep each test's to itself.
    monkeypatch.setattr(extensions, "_registered", dict(extensions._registered))
    monkeypatch.setattr(extensions, "_loaded", dict(extensions._loaded))


def write_track(root: Path, operation: dict[str, Any], **task: Any) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "track.json").write_text(json.dumps({"version": 2, "indices": [], "corpora": [],
                                                 "schedule": [{"operation": operation, **task}]}))
    return root


def race(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    rc = main(["--quiet", "race", *args])
    return rc, capsys.readouterr().err


def one_line(err: str, *needles: str) -> str:
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    for n in needles:
        assert n in lines[0], lines[0]
    return lines[0]


def test_in_process_extension_runs_its_operation_in_every_worker(tmp_path: Path, es_target: str,
                                                                 capsys: pytest.CaptureFixture[str],
                                                                 restore_registered: None) -> None:
    extensions.register("test-probe", probe_setup)
    pids = tmp_path / "pids"
    track = write_track(tmp_path / "t", {"name": "probe", "operation-type": PROBE, "pid-file": str(pids)},
                        clients=2, iterations=5)
    rc, err = race(capsys, f"--track-path={track}", f"--target-hosts={es_target}", "--worker-processes=2")
    assert rc == 0, err
    with TrialStore() as store:
        (trial,) = store.list_trials()
        df = store.samples(trial.id)
    assert len(df) == 10 and set(df["operation_type"]) == {PROBE} and set(df["unit"]) == {"probes"}
    assert df["success"].all() and set(df["status"]) == {200}
    ran_in = set(pids.read_text().split())
    assert len(ran_in) == 2 and str(os.getpid()) not in ran_in  # both workers, never bench's own process


def test_the_registered_check_runs_when_the_track_is_loaded(tmp_path: Path, es_target: str,
                                                            capsys: pytest.CaptureFixture[str],
                                                            restore_registered: None) -> None:
    extensions.register("test-probe", probe_setup)
    track = write_track(tmp_path / "t", {"name": "probe", "operation-type": PROBE, "pid-file": "pids"})
    rc, err = race(capsys, f"--track-path={track}", f"--target-hosts={es_target}")
    assert rc != 0
    one_line(err, "track.json", "operation 'probe'", "pid-file 'pids'", "absolute path")
    track = write_track(tmp_path / "u", {"name": "probe", "operation-type": PROBE})
    rc, err = race(capsys, f"--track-path={track}", f"--target-hosts={es_target}")
    assert rc != 0
    one_line(err, "track.json", "operation 'probe'", "needs the parameter 'pid-file'")


def test_an_operation_type_nobody_registered_is_a_one_line_error(tmp_path: Path, es_target: str,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    track = write_track(tmp_path / "t", {"name": "x", "operation-type": "no-such-operation"})
    rc, err = race(capsys, f"--track-path={track}", f"--target-hosts={es_target}")
    assert rc != 0
    line = one_line(err, "track.json", "operation 'x' has unsupported operation-type 'no-such-operation'")
    assert "ccr-follow" in line and "loadgen-request" in line  # the types the installed extensions register


def test_a_runner_the_workers_lack_fails_the_race_naming_the_type(tmp_path: Path, es_target: str,
                                                                  capsys: pytest.CaptureFixture[str],
                                                                  restore_registered: None) -> None:
    extensions.register("test-main-only", main_only_setup)
    track = write_track(tmp_path / "t", {"name": "m", "operation-type": MAIN_ONLY, "pid-file": str(tmp_path / "p")},
                        iterations=1)
    rc, err = race(capsys, f"--track-path={track}", f"--target-hosts={es_target}")
    assert rc != 0
    one_line(err, f"no runner for operation type '{MAIN_ONLY}'")
    assert not (tmp_path / "p").exists()


def test_an_extension_setup_workers_cannot_import_is_refused_before_the_race(tmp_path: Path, es_target: str,
                                                                             capsys: pytest.CaptureFixture[str],
                                                                             restore_registered: None) -> None:
    def nested_setup() -> None:
        pass

    extensions.register("test-nested", nested_setup)
    track = write_track(tmp_path / "t", {"name": "s", "operation-type": "sleep", "duration": 0}, iterations=1)
    rc, err = race(capsys, f"--track-path={track}", f"--target-hosts={es_target}")
    assert rc != 0
    one_line(err, "extension 'test-nested'", "nested_setup", "module-level function")


def test_a_second_runner_for_a_type_is_a_clear_error() -> None:
    with pytest.raises(ConfigError, match=r"operation type 'bulk' is registered twice, by bench\.driver\.runners\.core\."
                                          r"bulk and by bench\.driver\.runners\.core\.search"):
        register_runner("bulk", search)
    spec = runner_spec("bulk")
    assert spec is not None and spec.runner.__name__ == "bulk"
    same = runner_spec("search")
    assert same is not None
    register_runner("search", same.runner, required=same.required, check=same.check)  # again: harmless
