"""The live view of a race, seen as a user sees it: real `bench race` processes against the null sink (answers
delayed 20 ms: a known latency), a paced search task.

- on a terminal (tmux, 160x40): the task's line redrawn every second, its numbers moving between two captures;
- off a terminal: plain lines (a progress line every 10 s with the latency percentiles);
- ``--live-html``: the page in headless Chromium twice during the race (numbers moving), a screenshot, then the
  final page, its copy kept with the trial and ``bench show --live-html`` drawing it again.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from bench.trials.sqlite import TrialStore
from benchmarks.nullsink import running
from tests.race.test_race import write_track

TMUX = shutil.which("tmux")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DELAY = 0.02  # the sink's answers: every latency is at least this


@pytest.fixture
def delayed_sink():
    with running(delay=DELAY) as sink:
        yield sink


def _track(root: Path, seconds: int) -> Path:
    return write_track(root, [{"operation": {"name": "q", "operation-type": "search", "index": "logs",
                                             "body": {"query": {"match_all": {}}}},
                               "clients": 4, "target-throughput": 100, "time-period": seconds}],
                       indices=[{"name": "logs"}])


def _env(home: Path) -> dict[str, str]:
    return {**os.environ, "BENCH_HOME": str(home)}


def _task_line(screen: str) -> list[str] | None:
    """The q task's cells of the live table: Elapsed, Remaining, Rate now, p50, p90, p99, Requests, Errors."""
    m = re.search(r"^\s*q\s+(\d+ s)\s+(\d+ s|done)\s+([\d,]+ ops/s)\s+([\d.,-]+)\s+([\d.,-]+)\s+([\d.,-]+)\s+"
                  r"([\d,]+)\s+(\d+)\s*$", screen, re.M)
    return list(m.groups()) if m else None


def test_the_terminal_view_redraws_each_task_line_every_second(tmp_path, delayed_sink, sustained_load):
    if TMUX is None:
        pytest.skip("tmux not installed (apt-get install -y tmux): the terminal view was not watched")
    track = _track(tmp_path / "t", 8)
    sock = f"bench-live-{os.getpid()}"
    cmd = (f"env BENCH_HOME={tmp_path / 'home'} {sys.executable} -m bench race --track-path={track} "
           f"--target-hosts={delayed_sink}; sleep 30")
    tmux = [TMUX, "-L", sock]
    subprocess.run([*tmux, "new-session", "-d", "-x", "160", "-y", "40", cmd], check=True, cwd=tmp_path,
                   env=_env(tmp_path / "home"))
    try:
        captures: list[list[str]] = []
        deadline = time.monotonic() + 30
        while len(captures) < 2 and time.monotonic() < deadline:
            screen = subprocess.run([*tmux, "capture-pane", "-p"], capture_output=True, text=True, check=True).stdout
            line = _task_line(screen)
            if line is not None and int(line[0].split()[0]) >= 3:  # a few seconds in: the rate is settled
                captures.append(line)
                time.sleep(1.5)
            else:
                time.sleep(0.2)
        assert len(captures) == 2, f"no live task line on the terminal:\n{screen}"
        (el1, _, _, p50, _, p99, req1, err1), (el2, _, rate2, _, _, _, req2, _) = captures
        print(f"tmux captures: {captures}")
        assert int(el2.split()[0]) > int(el1.split()[0]) and int(req2.replace(",", "")) > int(req1.replace(",", ""))
        assert err1 == "0" and 80 <= int(rate2.split()[0].replace(",", "")) <= 120  # paced at 100/s
        # latency from the due time: at least the sink's 20 ms, and not wildly more on an idle sink
        assert DELAY * 1000 <= float(p50) < 60 and float(p99) >= float(p50)
        deadline = time.monotonic() + 30
        while "stored (complete)" not in screen and time.monotonic() < deadline:
            time.sleep(0.5)
            screen = subprocess.run([*tmux, "capture-pane", "-p"], capture_output=True, text=True).stdout
        assert "done q: " in screen and _task_line(screen) is None  # the live table is gone once the step ends
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True)


def _chromium(profile: Path, *args: str) -> str:
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", f"--user-data-dir={profile}", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=True).stdout


def _shown(dom: str) -> dict[str, str]:
    cells = dict(re.findall(r'data-task="q" data-field="(\w+)"[^>]*>([^<]*)<', dom))
    running = re.search(r'data-running="(\w+)"', dom)
    return {**cells, "running": running.group(1) if running else ""}


def test_off_a_terminal_plain_lines_and_the_live_page_moves_in_chromium(tmp_path, delayed_sink, sustained_load):
    if CHROMIUM is None:
        pytest.skip("headless Chromium not installed (apt-get install -y chromium): the page was not opened")
    track, page, home = _track(tmp_path / "t", 12), tmp_path / "live.html", tmp_path / "home"
    proc = subprocess.Popen([sys.executable, "-m", "bench", "race", f"--track-path={track}",
                             f"--target-hosts={delayed_sink}", f"--live-html={page}"], cwd=tmp_path, env=_env(home),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        seen: list[dict[str, str]] = []
        deadline = time.monotonic() + 40
        while len(seen) < 2 and time.monotonic() < deadline and proc.poll() is None:
            shown = _shown(_chromium(tmp_path / "chromium", "--dump-dom", page.as_uri())) if page.exists() else {}
            if shown.get("running") == "true" and int(shown.get("requests", "0").replace(",", "")) > 100:
                seen.append(shown)
                if len(seen) == 1:
                    shot = tmp_path / "live-page.png"
                    _chromium(tmp_path / "chromium", "--window-size=1500,1300", f"--screenshot={shot}", page.as_uri())
                    print(f"live page screenshot during the race: {shot}")
                time.sleep(2)
            else:
                time.sleep(0.3)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert len(seen) == 2, f"the page never showed the running task twice: {seen}"
    print(f"Chromium saw: {seen}")
    first, second = seen
    assert int(second["requests"].replace(",", "")) > int(first["requests"].replace(",", ""))
    assert DELAY * 1000 <= float(first["p50"]) and first["errors"] == "0"
    assert (tmp_path / "live-page.png").stat().st_size > 10_000

    # off a terminal: plain lines, one progress line after 10 s with the latency percentiles
    assert "Running q" in err and re.search(r"^  q: 1\d s, [\d,]+ ops/s, [\d,]+ requests, 0 errors, latency p50 "
                                            r"[\d.]+ ms p90 [\d.]+ ms p99 [\d.]+ ms \(last 10 s\)$", err, re.M), err
    assert "\x1b[" not in err  # no terminal control codes in a log

    # the final page: no reload, the task as it ended, every request the trial stored
    final = _shown(page.read_text())
    with TrialStore(home / "bench.db") as store:
        trial = store.list_trials(1)[0]
        df = store.samples(trial.id)
    assert final["running"] == "false" and int(final["requests"].replace(",", "")) == len(df)
    # and its last numbers are the stored samples' own: latency percentiles over the answers of the last 10 s
    # (within the histogram's 1 %), the rate over the two settled seconds before them
    data = re.search(r'<script type="application/json" id="live-data">(.*?)</script>', page.read_text())
    assert data
    record = json.loads(data.group(1))
    last, now = record["tasks"]["q"][-1], record["updated"]
    sec = math.floor(now)
    done = np.floor(df["absolute_time"] + df["latency"])
    window = df["latency"][(done > sec - 10) & (done <= sec)].to_numpy()
    for p in (50, 90, 99):
        exact = float(np.percentile(window, p, method="inverted_cdf")) * 1000
        assert last["latency_ms"][f"p{p}"] == pytest.approx(exact, rel=0.01), (p, last, exact)
    # the task is done, every sample in: its last rate counts up to the end (the two seconds' buckets to now)
    assert last["rate"] == pytest.approx((done >= sec - 1).sum() / (now - (sec - 1)))
    assert '<meta http-equiv="refresh"' not in page.read_text()
    kept = home / "trials" / trial.id / "live" / "live.html"
    assert f"Live page kept with the trial: {kept}" in out
    again = tmp_path / "again.html"
    assert subprocess.run([sys.executable, "-m", "bench", "show", trial.id[:8], f"--live-html={again}"], env=_env(home),
                          capture_output=True, text=True).returncode == 0
    assert _shown(again.read_text()) == final == _shown(kept.read_text())
