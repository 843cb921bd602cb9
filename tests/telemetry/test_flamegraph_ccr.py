"""Flame graphs of a real CCR race on the live OpenSearch pair (tests/support/ccr_pair.py), and the differential of a baseline
race against it from ``bench compare --figures-dir`` and the compare HTML report, checked in headless Chromium:
the graph draws, frames carry names, search colours and measures matches, a click zooms."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from bench.cli import main
from bench.telemetry.profile import ProfileSection
from bench.trials.sqlite import TrialStore
from tests.support.ccr_pair import CcrPairInfo, os_ccr_pair  # noqa: F401 - fixture

pytestmark = pytest.mark.cluster
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
PROFILE = ["--telemetry=profile", "--telemetry-params=profile-interval:10"]

# Run after the page's own scripts: what a user does (search, click) and what the page shows then.
PROBE = """<script>window.addEventListener('load',()=>{
const out=[];document.querySelectorAll('.fg').forEach(fg=>{
 const r={frames:fg.querySelectorAll('g.frame').length,
  names:Array.from(fg.querySelectorAll('g.frame')).map(g=>g.dataset.name).slice(0,400),
  drawnText:Array.from(fg.querySelectorAll('text')).map(t=>t.textContent).slice(0,60)};
 const q=fg.querySelector('input');q.value='opensearch';q.dispatchEvent(new Event('input'));
 r.search=fg.querySelector('.info').textContent;
 r.matched=Array.from(fg.querySelectorAll('rect')).filter(x=>x.getAttribute('fill')==='rgb(230,0,230)').length;
 q.value='';q.dispatchEvent(new Event('input'));
 const g=Array.from(fg.querySelectorAll('g.frame')).find(x=>x.dataset.name.startsWith('['));
 if(!g){r.empty=fg.querySelector('.info').textContent;out.push(r);return;}
 g.dispatchEvent(new MouseEvent('click'));
 const again=Array.from(fg.querySelectorAll('g.frame')).find(x=>x.dataset.name===g.dataset.name);
 r.zoomed=fg.querySelector('.info').textContent;r.zoomWidth=Number(again.querySelector('rect').getAttribute('width'));
 r.clicked=g.dataset.name;out.push(r);});
document.body.setAttribute('data-probe',JSON.stringify(out));});</script>"""


def _probe(page: Path, tmp_path: Path) -> list[dict[str, Any]]:
    assert CHROMIUM is not None
    probed = tmp_path / f"probe-{page.name}"
    probed.write_text(page.read_text().replace("</body>", PROBE + "</body>"))
    dom = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                          "--disable-background-networking", "--disable-component-update", "--disable-sync",
                          f"--user-data-dir={tmp_path / 'chromium-profile'}", "--virtual-time-budget=20000",
                          "--dump-dom", probed.as_uri()], capture_output=True, text=True, timeout=180,
                         check=True).stdout
    m = re.search(r'data-probe="([^"]*)"', dom)
    assert m, dom[:500]
    return json.loads(html.unescape(m.group(1)))


def _race(*args: str) -> str:
    assert main(["--quiet", "race", "--track=nginx", "--test-mode", *PROFILE, *args]) == 0
    with TrialStore() as store:
        return store.list_trials(1)[0].id


@pytest.mark.timeout(900)
def test_ccr_race_flame_graphs_and_the_differential_against_a_baseline(os_ccr_pair: CcrPairInfo,  # noqa: F811
                                                                      tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BENCH_HOME", str(tmp_path / "home"))
    pair = os_ccr_pair
    pair.fresh("nginx")
    try:
        base = _race("--challenge=baseline", f"--target-hosts={pair.leader_url.removeprefix('http://')}")
        ccr = _race("--challenge=ccr", f"--target-hosts={pair.target_hosts}")
    finally:
        pair.fresh("nginx")
    with TrialStore() as store:
        section = ProfileSection.model_validate(store.summary(ccr).sections["profile"])
    whole = {g.cluster: g for g in section.graphs if g.task == "all"}
    assert set(whole) == {"leader", "follower"} and all(g.samples > 0 for g in whole.values()), section

    figures = tmp_path / "figures"
    assert main(["compare", base, ccr, f"--figures-dir={figures}"]) == 0
    diffs = sorted(figures.glob("flamegraph-diff-*.html"))
    titles = [re.search(r"<title>(.*?)</title>", p.read_text()).group(1) for p in diffs]  # type: ignore[union-attr]
    assert any("leader/leader-0 against" in html.unescape(t) and ", all:" in html.unescape(t) for t in titles), titles
    assert any("follower/follower-0 against" in html.unescape(t) for t in titles), titles
    page = next(p for p, t in zip(diffs, titles, strict=True) if "leader/leader-0" in t and ", all:" in t)
    text = page.read_text()
    assert "Frames whose share of the samples grew most" in text and "added, points" in text

    report = tmp_path / "cmp.html"
    assert main(["--quiet", "report", "--compare", base, ccr, "--format", "html", "--output", str(report)]) == 0
    assert report.read_text().count('class="fg"') >= 4  # baseline's own, the CCR nodes' differentials, per task

    if CHROMIUM is None:
        pytest.skip("headless Chromium not installed (apt-get install -y chromium)")
    [probe] = _probe(page, tmp_path)
    assert probe["frames"] > 10
    assert any(n.startswith("org.opensearch.") for n in probe["names"])
    assert not [n for n in probe["names"] if re.fullmatch(r"(0x)?[0-9a-f]{8,}", n)]  # names, never addresses
    assert any(len(t) > 3 for t in probe["drawnText"])  # boxes wide enough carry their frame's name
    assert probe["matched"] > 0 and re.search(r"matched \d+\.\d\d%", probe["search"]), probe["search"]
    assert probe["zoomed"].startswith(f"zoomed: {probe['clicked']}") and probe["zoomWidth"] == 1200
    probes = _probe(report, tmp_path)
    # every graph drew; a window too short for a sample says so (test mode's tiny tasks)
    assert len(probes) >= 4 and all(p["frames"] > 1 or p.get("empty") == "no samples in this window" for p in probes)
    assert sum(1 for p in probes if p["frames"] > 10) >= 3
