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
from bench.reporting.plots import plotly_js
from tests.support.checkout import ROOT
from tests.support.compare_trials import compare_trials, es_target_session  # noqa: F401 - fixtures

pytestmark = pytest.mark.cluster
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="headless Chromium not installed (apt-get install -y chromium; CI's .ci/run installs it)")
ARTIFACTS = ROOT / "test-artifacts"


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


# Written into the page after load: the page's width and each plot's traces and y axis, read back from the DOM
# Chromium dumps (no remote debugging needed).
_PROBE = """<script>window.addEventListener("load", function () { setTimeout(function () {
  var b = document.body, root = document.documentElement;
  b.setAttribute("data-scroll-width", String(root.scrollWidth));
  b.setAttribute("data-client-width", String(root.clientWidth));
  var plots = {};
  document.querySelectorAll("[data-plot]").forEach(function (d) {
    var el = d.querySelector(".js-plotly-plot");
    // Points plotly computed for each trace (calcdata: what it drew, whatever encoding the data came in).
    plots[d.getAttribute("data-plot")] = el ? {
      points: (el.calcdata || []).map(function (cd) {
        return cd.filter(function (p) { return typeof p.y === "number" && isFinite(p.y); }).length; }),
      y0: el._fullLayout.yaxis.range[0]} : null;
  });
  b.setAttribute("data-plots", JSON.stringify(plots));
  var env = [], head = [];
  document.querySelectorAll("table.env, table.per-trial").forEach(function (t) {
    env.push([t.parentNode.scrollWidth, t.parentNode.clientWidth]);
  });
  document.querySelectorAll("#headline .box").forEach(function (box) {
    head.push([box.scrollWidth, box.clientWidth]);
  });
  b.setAttribute("data-env-boxes", JSON.stringify(env));
  b.setAttribute("data-headline-boxes", JSON.stringify(head));
}, 500); });</script>"""


def _measured(tmp_path: Path, html: Path, width: int) -> tuple[str, dict[str, str]]:
    """The DOM Chromium built at ``width`` px, and the probe's attributes on <body>."""
    probe = tmp_path / f"probe-{html.name}"
    probe.write_text(html.read_text().replace("</body>", _PROBE + "</body>"))
    dom = _chromium(tmp_path, f"--window-size={width},1200", "--dump-dom", probe.as_uri()).stdout
    body = re.search(r"<body([^>]*)>", dom)
    assert body, "no <body> in the dumped DOM"
    attrs = dict(re.findall(r'(data-[a-z-]+)="([^"]*)"', body.group(1)))
    assert "data-scroll-width" in attrs, "the probe did not run"
    return dom, {k: v.replace("&quot;", '"') for k, v in attrs.items()}


@needs_chromium
def test_compare_report_at_1400_px_starts_with_the_headline_and_fits_the_page(compare_trials, monkeypatch,  # noqa: F811
                                                                              tmp_path):
    import json

    monkeypatch.setenv("BENCH_HOME", str(compare_trials.home))
    html = tmp_path / "report.html"
    assert main(["report", "--compare", "tag:group=g1", "tag:group=g2", "--format=html", f"--output={html}"]) == 0
    dom, probe = _measured(tmp_path, html, 1400)
    # No horizontal overflow of the page at 1400 px, and the headline needs no scroll bar of its own.
    assert int(probe["data-scroll-width"]) <= 1400, probe
    boxes = json.loads(probe["data-headline-boxes"])
    assert boxes and all(scroll <= client for scroll, client in boxes), boxes
    # The headline comes first: its title, its rows and one sentence per candidate, all before the first plot.
    first_plot = dom.find('data-plot="')
    assert first_plot > 0
    head = dom.find("Headline: g2 (3 trials) vs baseline g1 (3 trials)")
    assert 0 < head < first_plot
    assert head < dom.find("<h2>Environment</h2>") < first_plot
    headline = dom[head:dom.find("</section>", head)]
    assert "median throughput" in headline and "p50 latency" in headline
    assert re.search(r'<td class="[^"]*\b(noise|improvement|regression)\b[^"]*">', headline), "no verdict colour"
    assert "g2 vs g1: median throughput of index" in headline
    # Every plot drawn has series with points, and its y axis starts at zero.
    plots = json.loads(probe["data-plots"])
    assert {"throughput-index", "latency-index", "cpu"} <= set(plots)
    for key, p in plots.items():
        assert p is not None, f"plot {key} was not drawn"
        assert p["points"] and all(n >= 1 for n in p["points"]), f"{key}: an empty series {p['points']}"
        assert p["y0"] == 0, f"{key}: y axis starts at {p['y0']}"
    # One node per cluster: its transport network is all zero, so those plots are left out -- and the report
    # says so.
    assert "net-rx" not in plots and "net-tx" not in plots
    assert "Network received per node (transport): not drawn" in dom and "sends nothing over transport" in dom
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "compare-report-1400.png"
    _chromium(tmp_path, "--window-size=1400,2400", f"--screenshot={shot}", html.as_uri())
    width, height, raw = _png_pixels(shot)
    assert (width, height) == (1400, 2400)
    assert len(set(raw[: len(raw) // 4])) > 50  # the top quarter (the headline) is drawn, not blank
    # One trial's report starts with its race headline too.
    one = tmp_path / "one.html"
    assert main(["report", compare_trials.groups["g1"][0], "--format=html", f"--output={one}"]) == 0
    dom, probe = _measured(tmp_path, one, 1400)
    assert int(probe["data-scroll-width"]) <= 1400, probe
    head = dom.find('<section id="headline">')
    assert 0 < head < dom.find("<h2>Environment</h2>") < dom.find('data-plot="')
    assert "min / median / max" in dom[head:dom.find("</section>", head)]


@needs_chromium
def test_environment_of_ten_trials_stays_inside_the_page(compare_trials, monkeypatch, tmp_path):  # noqa: F811
    import json

    monkeypatch.setenv("BENCH_HOME", str(compare_trials.home))
    g = compare_trials.groups
    baseline = ",".join([*g["g1"], *g["fast"]])
    candidate = ",".join([*g["g2"], g["slow"][0]])
    html = tmp_path / "ten.html"
    assert main(["report", "--compare", baseline, candidate, "--format=html", f"--output={html}"]) == 0
    dom, probe = _measured(tmp_path, html, 1400)
    assert int(probe["data-scroll-width"]) <= 1400, probe
    # Neither environment table needs even its own scroll bar.
    for scroll, client in json.loads(probe["data-env-boxes"]):
        assert scroll <= client, (scroll, client)
    per_trial = dom[dom.find('<table class="per-trial">'):]
    per_trial = per_trial[:per_trial.find("</table>")]
    assert per_trial.count("<tr>") == 11  # a header and one row per trial
    for trial in [*g["g1"], *g["fast"], *g["g2"], g["slow"][0]]:
        assert trial[:8] in per_trial
    # What every trial shares is shown once; what differs (the track params, the tags) is highlighted.
    assert "All 10 trials" in dom
    assert "Track params" in per_trial and "User tags" in per_trial
    assert 'class="changed"' in per_trial
    ARTIFACTS.mkdir(exist_ok=True)
    _chromium(tmp_path, "--window-size=1400,2400", f"--screenshot={ARTIFACTS / 'environment-10-trials.png'}",
              html.as_uri())
