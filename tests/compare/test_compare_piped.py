"""``bench compare`` piped (into a gist, a CI log) is as wide as ``$COLUMNS`` says: the tables are fitted and the
warnings wrapped to it, never one long line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

from benchmarks.nullsink import running
from tests.support.checkout import ROOT


def _bench(home: Path, *args: str, columns: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    env["BENCH_HOME"] = str(home)
    if columns:
        env["COLUMNS"] = columns
    return subprocess.run([sys.executable, "-m", "bench", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)


def test_a_piped_comparison_of_single_trials_keeps_within_columns(tmp_path: Path) -> None:
    track = tmp_path / "track"
    track.mkdir()
    (track / "track.json").write_text(json.dumps({
        "version": 2, "description": "a short search loop", "indices": [{"name": "i"}],
        "schedule": [{"operation": {"name": "search", "operation-type": "search", "index": "i",
                                    "body": {"query": {"match_all": {}}}}, "clients": 2, "iterations": 40}]}))
    ids = [uuid.uuid4().hex for _ in range(2)]
    with running() as sink:
        for trial in ids:
            done = _bench(tmp_path / "home", "--quiet", "race", f"--track-path={track}", f"--target-hosts={sink}",
                          f"--race-id={trial}")
            assert done.returncode == 0, done.stderr
    narrow = _bench(tmp_path / "home", "compare", *ids, columns="100")
    assert narrow.returncode == 0, narrow.stderr
    assert "Single trials" in narrow.stdout
    too_wide = [line for line in narrow.stdout.splitlines() if len(line) > 100]
    assert not too_wide, too_wide
    # Without $COLUMNS a pipe keeps the wide layout: the warning stays on one line.
    wide = _bench(tmp_path / "home", "compare", *ids)
    assert any("Single trials" in line and len(line) > 100 for line in wide.stdout.splitlines()), wide.stdout
