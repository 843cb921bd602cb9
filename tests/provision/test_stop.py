"""``bench stop <trial>``: the nodes a real ``--keep-cluster`` race left running are stopped, their logs kept
with the trial and their folders removed; nothing to stop is one clear line."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bench.provision.local import ROOT_NODES_BASE
from tests.cli.test_cli_errors import one_line_error
from tests.faults.test_faults import jvms_of, no_jvm_left
from tests.support.checkout import ROOT

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(420)]


def bench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bench", *args], env=dict(os.environ), cwd=ROOT,
                          capture_output=True, text=True, timeout=300)


def test_keep_cluster_then_bench_stop(bench_home: Path) -> None:
    raced = bench("race", "--track=nginx", "--test-mode", "--car=defaults,512mheap", "--keep-cluster")
    m = re.search(r"Trial ([0-9a-f]{32})", raced.stdout)
    assert m, raced.stdout[-2000:] + raced.stderr[-2000:]
    trial_id = m.group(1)
    nodes = ROOT_NODES_BASE / trial_id if os.geteuid() == 0 else bench_home / "trials" / trial_id / "nodes"
    try:
        assert raced.returncode == 0, raced.stderr[-2000:]
        assert f"stop it with: bench stop {trial_id}" in raced.stdout
        assert jvms_of(trial_id), "the kept node runs after the race"
        assert nodes.is_dir()

        stopped = bench("stop", trial_id[:10])
        assert stopped.returncode == 0, stopped.stderr
        assert "stopped node default-0 of cluster default" in stopped.stdout
        no_jvm_left(trial_id, timeout=30)
        assert not nodes.exists()
        kept_logs = bench_home / "trials" / trial_id / "logs" / "default" / "default-0"
        assert (kept_logs / "guard.log").is_file() and list(kept_logs.glob("*.log")), list(kept_logs.iterdir())
        assert "stopping" in " ".join(p.read_text(errors="replace") for p in kept_logs.glob("default*.log")).lower()

        again = bench("stop", trial_id[:10])
        assert again.returncode != 0
        one_line_error(again.stderr, trial_id, "no kept nodes")
    finally:
        for p in jvms_of(trial_id):
            p.kill()
        shutil.rmtree(nodes, ignore_errors=True)


def test_bench_stop_unknown_trial_is_one_line() -> None:
    proc = bench("stop", "abcdef12")
    assert proc.returncode != 0
    one_line_error(proc.stderr, "abcdef12")
