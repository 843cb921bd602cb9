"""The HTML report for real: rendered from real trials, opened in headless Chromium, plots checked in the DOM
Chromium built, and a screenshot kept in test-artifacts/."""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest

from bench.cli import main
from bench.home import project_root
from bench.reporting.plots import plotly_js
from tests.compare_trials import compare_trials, es_target_session  # noqa: F401 - fixtures

pytestmark = pytest.mark.cluster
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="headless Chromium not installed (apt-get install -y chromium; CI's .ci/run installs it)")
ARTIFACTS = project_root() / "test-artifacts"


def _chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", f"--user-data-dir={tmp_path / 'chromium-profile'}",
           "--virtual-time-budget=20000", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=180, check=True)


def _png_pixels(path: Path) -> tuple[int, int, bytes]:
    """Width, height and the decompressed (filtered) scanlines of a PNG: enough to tell blank from drawn."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width, height = 8, b"", 0, 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height = struct.unpack(">II", chunk[:8])
        elif kind == b"IDAT":
            idat += chunk
        pos += 12 + length
    return width, height, zlib.decompress(idat)


@needs_chromium
def test_html_report_renders_its_plots_in_headless_chromium(compare_trials, monkeypatch, tmp_path):  # noqa: F811
    monkeypatch.setenv("BENCH_HOME", str(compare_trials.home))
    html = tmp_path / "report.html"
    assert main(["report", "--compare", "tag:group=g1", "tag:group=g2", "--format=html", f"--output={html}"]) == 0
    # Self-contained: plotly.js is inlined and no tag loads anything (plotly.js itself holds a CDN URL for
    # geo maps, which these plots never use).
    page = html.read_text().replace(plotly_js(), "")
    assert not re.search(r"<(script|img|iframe)[^>]*\bsrc=|<link\b", page, re.IGNORECASE)
    dom = _chromium(tmp_path, "--dump-dom", html.as_uri()).stdout
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "compare-report.png"
    _chromium(tmp_path, "--window-size=1300,4000", f"--screenshot={shot}", html.as_uri())

    def plot_dom(key: str) -> str:
        # From this plot's marker to the next plot's (plotly may insert hidden helper elements in between).
        start = dom.find(f'data-plot="{key}"')
        assert start >= 0, f"plot {key} missing from the rendered page"
        end = dom.find('data-plot="', start + 1)
        return dom[start:end if end >= 0 else len(dom)]

    six = [*compare_trials.groups["g1"], *compare_trials.groups["g2"]]
    for key in ("throughput-index", "latency-index", "cpu"):
        body = plot_dom(key)
        assert 'class="main-svg"' in body, f"plotly did not draw {key}"
        # One trace per trial (the session cluster has one node), each drawn: a line through its points or,
        # for a run shorter than two buckets, its single marker.
        traces = body.split('class="trace scatter')[1:]
        assert len(traces) == 6, f"{key}: {len(traces)} series"
        for trace in traces:
            line = re.search(r'class="js-line"[^>]*d="M([^"]+)"', trace)
            assert (line and "L" in line.group(1)) or 'class="point"' in trace, f"{key}: an empty series"
        assert any("L" in d for d in re.findall(r'class="js-line"[^>]*d="M([^"]+)"', body))
        legend = re.findall(r'class="legendtext"[^>]*>([^<]+)<', body)
        for trial in six:
            assert any(trial[:8] in entry for entry in legend), f"{key}: no series for trial {trial[:8]}"
    assert "within noise" in dom and "Baseline g1" in dom
    width, height, raw = _png_pixels(shot)
    assert (width, height) == (1300, 4000)
    assert len(set(raw[: len(raw) // 2])) > 50  # many colours: text, tables and plots, not a blank page
