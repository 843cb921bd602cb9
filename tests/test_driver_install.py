"""The offline driver-host install (what the SSH driver test runs on its namespace host) takes pip, the
build tools and bench's dependencies from the test session's own environment, never from the base
interpreter behind it: the base of a fresh machine has nothing but pip and an old setuptools."""

from __future__ import annotations

import json
import subprocess
import sys
import sysconfig
import tarfile
from pathlib import Path

import pytest

import bench
from bench.cloud.ssh import install_command, pack_checkout
from tests.isolation import leaked


@pytest.mark.timeout(600)
def test_offline_driver_install_sees_only_the_test_environment(tmp_path: Path) -> None:
    if sys.prefix == sys.base_prefix:
        pytest.skip("the tests run in a base interpreter, not a venv: there is no base to keep out")
    src = tmp_path / "bench-src"
    src.mkdir()
    with tarfile.open(pack_checkout(tmp_path)) as tar:
        tar.extractall(src, filter="data")
    venv = tmp_path / "bench-venv"
    cmd = install_command(sys.executable, str(venv), str(src), offline=True)
    done = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=540)
    assert done.returncode == 0, done.stderr[-2000:]
    version = subprocess.run([str(venv / "bin" / "bench"), "--version"], capture_output=True, text=True, check=True)
    assert version.stdout.split()[-1] == bench.__version__
    probe = subprocess.run([str(venv / "bin" / "python"), "-c", "import json, sys; print(json.dumps(sys.path))"],
                           capture_output=True, text=True, check=True)
    seen = json.loads(probe.stdout)
    assert not leaked(seen), f"the driver venv sees the base interpreter's site-packages {leaked(seen)}"
    # The test environment's own site-packages is lent on purpose.
    assert str(Path(sysconfig.get_path("purelib")).resolve()) in {str(Path(p).resolve()) for p in seen if p}
