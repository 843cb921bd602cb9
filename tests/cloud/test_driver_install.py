"""The offline driver-host install (what the SSH driver test runs on its namespace host) installs the wheel
of the running bench and takes pip and bench's dependencies from the test session's own environment, never
from the base interpreter behind it: the base of a fresh machine has nothing but pip and an old setuptools."""

from __future__ import annotations

import json
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

import bench
from bench.cloud.ssh import install_command
from bench.cloud.wheel import build_wheel
from tests.support.isolation import leaked


@pytest.mark.timeout(600)
def test_offline_driver_install_sees_only_the_test_environment(tmp_path: Path) -> None:
    if sys.prefix == sys.base_prefix:
        pytest.skip("the tests run in a base interpreter, not a venv: there is no base to keep out")
    wheel = build_wheel(tmp_path / "wheel")
    venv = tmp_path / "bench-venv"
    cmd = install_command(sys.executable, str(venv), str(wheel), offline=True)
    done = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=540)
    assert done.returncode == 0, done.stderr[-2000:]
    version = subprocess.run([str(venv / "bin" / "bench"), "--version"], capture_output=True, text=True, check=True)
    assert version.stdout.split()[-1] == bench.__version__
    probe = subprocess.run([str(venv / "bin" / "python"), "-c",
                            "import bench, json, sys; print(json.dumps([bench.__file__, *sys.path]))"],
                           capture_output=True, text=True, check=True, cwd=tmp_path)
    module, *seen = json.loads(probe.stdout)
    # The wheel's bench in the venv, not the checkout (the test environment's editable bench is on the lent path).
    assert Path(module).is_relative_to(venv), module
    assert not leaked(seen), f"the driver venv sees the base interpreter's site-packages {leaked(seen)}"
    # The test environment's own site-packages is lent on purpose.
    assert str(Path(sysconfig.get_path("purelib")).resolve()) in {str(Path(p).resolve()) for p in seen if p}
