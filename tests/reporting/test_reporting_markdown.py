"""Markdown reports from the Jinja2 templates, custom templates, PNG export, and no credentials in reports."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest

from bench.cli import main
from bench.trials.sqlite import TrialStore
from tests.support.compare_trials import compare_trials, es_target_session, race, write_compare_track  # noqa: F401

pytestmark = pytest.mark.cluster


def test_trial_report_has_environment_summary_and_telemetry(compare_trials, monkeypatch, tmp_path, capsys):  # noqa: F811
    monkeypatch.setenv("BENCH_HOME", str(compare_trials.home))
    trial = compare_trials.groups["g1"][0]
    capsys.readouterr()
    assert main(["report", trial[:8]]) == 0
    md = capsys.readouterr().out
    for heading in ("## Environment", "## Cluster totals", "## Task index", "## Telemetry"):
        assert heading in md
    # The headline first: a line per working task, before the environment and the full tables.
    assert md.index("## Headline") < md.index("## Environment") < md.index("## Cluster totals")
    assert re.search(r"^\| index +\|", md[md.index("## Headline"):md.index("## Environment")], re.MULTILINE)
    assert "| Track params |" in md and "| User tags | group=g1 |" in md
    assert "elasticsearch 8.19.21" in md
    assert "| Mean Throughput | index |" in md

    own = tmp_path / "mine.md.j2"
    own.write_text("{{ trial.track }} {{ trial.user_tags.group }} {{ sections | length }}\n")
    out = tmp_path / "mine.md"
    assert main(["report", trial, f"--template={own}", f"--output={out}"]) == 0
    assert out.read_text().startswith("track g1 ")

    bad = tmp_path / "bad.md.j2"
    bad.write_text("{{ no_such_variable }}")
    assert main(["report", trial, f"--template={bad}"]) == 2
    assert "no_such_variable" in capsys.readouterr().err


def test_compare_report_markdown_and_png_plots(compare_trials, monkeypatch, tmp_path, capsys):  # noqa: F811
    monkeypatch.setenv("BENCH_HOME", str(compare_trials.home))
    plots = tmp_path / "plots"
    args = ["report", "--compare", "tag:rate=fast", "tag:rate=slow", f"--output={tmp_path / 'r.md'}"]
    if shutil.which("chromium"):  # kaleido drives the system Chromium
        args.append(f"--plots-dir={plots}")
    assert main(args) == 0
    md = (tmp_path / "r.md").read_text()
    assert "## Comparison" in md and "**regression**" in md
    # The comparison's headline first: its rows with the result, one sentence per candidate.
    head = md.index("## Headline: slow (3 trials) vs baseline fast (3 trials)")
    assert head < md.index("## Environment") < md.index("## Comparison")
    headline = md[head:md.index("## Environment")]
    assert re.search(r"^\| median throughput +\| index .*\*\*regression\*\*", headline, re.MULTILINE), headline
    assert "slow vs fast: median throughput of index −" in headline
    assert "| Mean Throughput | index |" in md
    if shutil.which("chromium"):
        pngs = sorted(p.name for p in plots.glob("*.png"))
        assert "throughput-index.png" in pngs and "latency-index.png" in pngs
        assert all((plots / p).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in pngs)


def test_reports_never_show_credentials(es_target_session, tmp_path, capsys):  # noqa: F811
    # The session cluster has security off: it ignores the credentials, but bench must still hide them.
    track = write_compare_track(tmp_path / "t")
    secret = "Sup3r-s3cret-pw"
    trial = race(track, es_target_session, "--client-options=basic_auth_user:elastic,basic_auth_password:" + secret,
                 "--track-params=ingest_percentage:10")
    with TrialStore() as store:
        assert store.get_trial(trial).status == "complete"
    # A new process, as a user would run it: it knows no secret, so only what was stored is shown.
    env = {**os.environ}
    md = subprocess.run([sys.executable, "-m", "bench", "report", trial], capture_output=True, text=True,
                        env=env, timeout=300, check=True).stdout
    subprocess.run([sys.executable, "-m", "bench", "report", "--compare", trial, trial, "--format=html",
                    f"--output={tmp_path / 'r.html'}"], env=env, timeout=300, check=True, capture_output=True)
    assert "| Trial |" in md
    assert secret not in md and secret not in (tmp_path / "r.html").read_text()
