"""The nightly history site: change points, annotations and the site itself.

Pure tests first (the change-point rule on synthetic series, annotations' days and filters, the CLI's one-line
errors). Then ten simulated nights of real races against the session cluster, made once: a paced indexing task
(bulks of 10 documents at 10 requests/s, so the rate is the race's throughput) whose target drops 15 % from night 6
on (a throttled target the race really experiences), with night 3 run 30 % slower (one noisy night) and night 4
against a closed port (a failed night). Each night is `bench experiment --history 9
--fail-on-regression=change-point`; afterwards the nights' trials are moved to one day apart (the races are real,
their dates simulated), an annotation is added, and the site is built from the local store and, from an empty
BENCH_HOME, from a metrics store the trials were pushed to (the session cluster, prefix histsite): both sites are
the same bytes. The pages are opened in headless Chromium at 1400 and 390 px.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from datetime import timedelta
from pathlib import Path

import pytest

from bench.cli import main
from bench.reporting.changepoints import change_points
from bench.trials.annotations import Annotation, at_midnight, select
from bench.trials.sqlite import TrialStore
from bench.util.errors import ConfigError
from tests.support.checkout import ROOT
from tests.support.compare_trials import es_target_session, write_compare_track  # noqa: F401 - fixture

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def test_a_persistent_step_is_found_where_it_starts_and_one_noisy_night_is_not():
    nights = [100.0, 101.0, 70.0, 99.5, 100.5, 85.0, 85.5, 84.5, 85.2, 84.8]
    [cp] = change_points(nights, higher_is_better=True)
    assert cp.index == 5 and cp.direction == "regression" and -16 < (cp.shift_pct or 0) < -14
    assert change_points([100.0, 101.0, 70.0, 99.5, 100.5, 100.2, 99.8, 100.1, 99.9, 100.3], True) == []
    # a slow drift that no single night flags (1.5 % a night) is still cut somewhere
    assert change_points([100 - 1.5 * i for i in range(10)], True)
    # lower is better: the same step is an improvement; too few nights: nothing yet
    assert change_points(nights, higher_is_better=False)[0].direction == "improvement"
    assert change_points(nights[:5], True) == []


def test_annotations_are_pinned_to_midnight_and_listed_newest_first():
    assert at_midnight("20261124T013005Z") == "20261124T000000Z" == at_midnight("20261124")
    with pytest.raises(ConfigError, match="--race-timestamp 'yesterday'"):
        at_midnight("yesterday")
    a = Annotation(race_timestamp="20261120T000000Z", message="a", track="nginx")
    b = Annotation(race_timestamp="20261124T000000Z", message="b")
    assert select([a, b]) == [b, a] and select([a, b], track="nginx") == [a]
    from datetime import date
    assert select([a, b], from_date=date(2026, 11, 21)) == [b]


def test_annotation_commands_as_rallys(capsys):
    assert main(["add", "annotation", "--race-timestamp=20261124T013005Z", "--message=JDK 25", "--track=nginx",
                 "--dry-run"]) == 0
    assert "Would add annotation with message [JDK 25]" in capsys.readouterr().out
    assert main(["add", "annotation", "--race-timestamp=20261124T013005Z", "--message=JDK 25",
                 "--chart-type=indexing"]) == 0
    added = re.search(r"Successfully added annotation \[([0-9a-f-]+)\]", capsys.readouterr().out)
    assert added
    assert main(["list", "annotations"]) == 0
    out = capsys.readouterr().out
    assert "20261124T000000Z" in out and "JDK 25" in out and "indexing" in out
    assert main(["list", "annotations", "--from-date=20261125"]) == 0
    assert "No annotations found in environment [local]" in capsys.readouterr().out
    assert main(["delete", "annotation", f"--id={added.group(1)},nope"]) == 1
    out = capsys.readouterr().out
    assert f"Successfully deleted [{added.group(1)}]" in out and "Did not find [nope]" in out
    rc = main(["list", "annotations", "--to-date=2026-11-24"])
    err = capsys.readouterr().err
    assert rc == 2 and "--to-date '2026-11-24': use yyyyMMdd" in err and "Traceback" not in err


def test_a_site_needs_an_experiment_with_a_study(tmp_path, capsys):
    f = tmp_path / "exp.yml"
    f.write_text("name: x\nrace: {track: nginx, target-hosts: '127.0.0.1:9'}\nvariants: {a: {}}\n")
    rc = main(["history", "site", str(f), f"--output={tmp_path / 'site'}"])
    err = capsys.readouterr().err
    assert rc == 2 and "experiment x: the history site follows a study's rows" in err and "Traceback" not in err


EXP = """
name: nightly-site
repetitions: 1
race:
  track-path: {track}
  target-hosts: "{target}"
  track-params: {{bulk_size: 10, time_period: 5, target: {rate}}}
variants:
  paced: {{}}
study:
  indexing-task: {{paced: index}}
"""
# night -> bulks per second: 10 (100 docs/s), night 3 noisy, night 6 on 15 % slower
RATES = {1: 10, 2: 10, 3: 7, 4: 10, 5: 10, 6: 8.5, 7: 8.5, 8: 8.5, 9: 8.5, 10: 8.5}
FAILED_NIGHT = 4


def _files(site: Path) -> dict[str, bytes]:
    return {str(p.relative_to(site)): p.read_bytes() for p in sorted(site.rglob("*"))
            if p.is_file() and p.name != ".bench-site.json"}


def _chromium(tmp_path: Path, *args: str) -> str:
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", f"--user-data-dir={tmp_path / 'chromium-profile'}",
           "--virtual-time-budget=10000", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=180, check=True).stdout


def _in_chromium(tmp_path: Path, site: Path, page: str, width: int) -> dict[str, str]:
    """The page laid out ``width`` px wide (in an iframe: headless windows are never narrower than 500 px), as
    Chromium measured it: scroll width, charts, drawn points, and every link's target."""
    probe = site / f"probe-{width}-{Path(page).name}"
    text = (site / page).read_text().replace("</body>", (
        "<script>parent.postMessage([document.documentElement.scrollWidth, window.innerWidth,"
        "document.querySelectorAll('svg.chart-svg').length, document.querySelectorAll('svg .point circle').length,"
        "Array.from(document.querySelectorAll('a')).map(function (a) { return new URL(a.getAttribute('href'), location.href).href; }).join(' ')].join('|'), '*')"
        "</script></body>"))
    probe = (site / page).parent / probe.name
    probe.write_text(text)
    frame = probe.with_name(f"frame-{probe.name}")
    frame.write_text(f'<html><body><iframe src="{probe.name}" style="width:{width}px;height:900px;border:0"></iframe>'
                     '<script>addEventListener("message", function (e) { document.body.setAttribute("data-m", '
                     'e.data); });</script></body></html>')
    try:
        dom = _chromium(tmp_path, "--dump-dom", frame.as_uri())
    finally:
        probe.unlink()
        frame.unlink()
    m = re.search(r'data-m="([^"]*)"', dom)
    assert m, f"{page} at {width} px: the page did not finish loading in Chromium"
    scroll, inner, svgs, points, links = m.group(1).replace("&amp;", "&").split("|")
    return {"scroll": scroll, "inner": inner, "svgs": svgs, "points": points, "links": links}


@pytest.mark.cluster
@pytest.mark.timeout(900)
def test_ten_real_nights_make_a_site_with_the_step_annotations_and_failed_night(
        tmp_path, es_target_session, capsys, monkeypatch):  # noqa: F811
    track = write_compare_track(tmp_path / "track")
    exp = tmp_path / "nightly.yml"
    rcs, steps_said = {}, {}
    for night, rate in RATES.items():
        target = "127.0.0.1:9" if night == FAILED_NIGHT else es_target_session
        exp.write_text(EXP.format(track=track, target=target, rate=rate))
        rcs[night] = main(["--quiet", "experiment", str(exp), "--history=9", "--fail-on-regression=change-point"])
        out = capsys.readouterr().out
        steps_said[night] = re.findall(r"STEP paced: Median Throughput \(indexing\) (-1\d\.\d) % from run", out)
    # --fail-on-regression=change-point exits 3 from the night the step is confirmed -- its third measured night or
    # later -- (the Min and Max rows' steps may be confirmed a night apart from the Median's), never before; the
    # failed night exits 1 (its race failed), the noisy night 0. The step is said once, on the night it is confirmed
    # (8.5 bulks/s counted in one-second buckets: the median moves by 12.5 to 15 %).
    first = min(n for n, rc in rcs.items() if rc == 3)
    assert first >= 8 and all(rc == (1 if n == FAILED_NIGHT else 0) for n, rc in rcs.items() if n < first), rcs
    said = {n: s for n, s in steps_said.items() if s}
    assert list(said) == [first] and len(said[first]) == 1 and -17 < float(said[first][0]) < -10, (steps_said, rcs)

    with TrialStore() as store:  # one night a day, the newest yesterday
        trials = sorted((t for t in store.list_trials(100) if t.user_tags.get("experiment") == "nightly-site"),
                        key=lambda t: t.start_time)
        runs = list(dict.fromkeys(t.user_tags["experiment-run"] for t in trials))
        assert len(runs) == 10
        for t in trials:
            shift = timedelta(days=10 - runs.index(t.user_tags["experiment-run"]), hours=1)
            store.update_trial(t.id, start_time=t.start_time - shift,
                               end_time=t.end_time - shift if t.end_time else None)
        day6 = min(store.get_trial(t.id).start_time for t in trials if t.user_tags["experiment-run"] == runs[5])
    store_flags = [f"--metrics-store=http://{es_target_session.split(',')[0]}",
                   "--metrics-store-options=index_prefix:histsite"]
    assert main(["add", "annotation", f"--race-timestamp={day6:%Y%m%dT%H%M%SZ}",
                 "--message=refresh interval changed", *store_flags]) == 0
    assert main(["store", "push", *store_flags]) == 0
    capsys.readouterr()

    site = tmp_path / "site"
    assert main(["history", "site", str(exp), f"--output={site}", "--window=5"]) == 0
    assert "10 night(s), 3 chart(s)" in capsys.readouterr().out
    page = (site / "nightly-site.html").read_text()
    median = page[page.index('id="nightly-site-0-paced-median-throughput-indexing"'):]
    median = median[:median.index("</figure>")]
    # the step is marked at night 6, nowhere else (the noisy night 3 is not a step)
    steps = re.findall(r'<g class="step (\w+)" data-night="([^"]+)"', median)
    assert steps == [("regression", runs[5])], steps
    assert re.findall(r'class="annotation" data-night="([^"]+)"', median) == [runs[5]]
    assert "refresh interval changed" in median
    # the failed night: a gap with its error, linked to its page; nine points, each linked to its night's page
    failed = re.search(r'<a href="([^"]+)" class="failed" data-night="([^"]+)"><title>([^<]+)</title>', median)
    assert failed and failed.group(2) == runs[3] and "failed" in failed.group(3)
    assert "127.0.0.1:9" in (site / failed.group(1)).read_text()
    points = re.findall(r'<a href="([^"]+)" class="point" data-night="([^"]+)" data-trend="([^"]+)"', median)
    assert [p[1] for p in points] == [r for i, r in enumerate(runs) if i != 3]
    assert all((site / href).is_file() for href, _n, _t in points)
    # the noise band judges night 3 (30 % slow after two 100 docs/s nights) a regression: one night, no step
    assert dict((n, t) for _h, n, t in points)[runs[2]] == "regression"

    # incremental: nothing changed, nothing written
    assert main(["history", "site", str(exp), f"--output={site}", "--window=5"]) == 0
    assert "0 file(s) written" in capsys.readouterr().out

    # the same site from the metrics store, on a machine with an empty BENCH_HOME
    monkeypatch.setenv("BENCH_HOME", str(tmp_path / "other-machine"))
    from_store = tmp_path / "site-from-store"
    assert main(["history", "site", str(exp), f"--output={from_store}", "--window=5", *store_flags]) == 0
    assert "10 night(s), 3 chart(s)" in capsys.readouterr().out
    local_files, store_files = _files(site), _files(from_store)
    assert sorted(local_files) == sorted(store_files)
    assert [p for p in local_files if local_files[p] != store_files[p]] == []

    if CHROMIUM is None:
        pytest.skip("headless Chromium not installed (apt-get install -y chromium): the pages were not opened")
    for name in ("index.html", "nightly-site.html", points[0][0]):
        for width in (1400, 390):
            seen = _in_chromium(tmp_path, site, name, width)
            assert int(seen["scroll"]) <= int(seen["inner"]) == width, (name, width, seen)
            if name == "nightly-site.html":
                assert seen["svgs"] == "3" and seen["points"] == str(3 * 9), seen
            for link in seen["links"].split():
                assert link.startswith("file://"), link
                assert Path(link.removeprefix("file://").split("#")[0]).is_file(), f"{name}: {link} does not resolve"
    artifacts = ROOT / "test-artifacts"
    artifacts.mkdir(exist_ok=True)
    _chromium(tmp_path, "--window-size=1400,1600", f"--screenshot={artifacts / 'history-site.png'}",
              (site / "nightly-site.html").as_uri())


def test_a_night_failing_before_its_trial_exists_is_a_failed_night_with_its_error(tmp_path, capsys):
    track = tmp_path / "track"
    track.mkdir()
    # a track that changed under the nightly job: it no longer takes the parameters the experiment gives
    (track / "track.json").write_text('{"version": 2, "indices": [{"name": "i"}], "schedule": []}')
    f = tmp_path / "exp.yml"
    f.write_text(EXP.format(track=track, target="127.0.0.1:9", rate=10))
    assert main(["--quiet", "experiment", str(f)]) != 0
    with TrialStore() as store:
        [trial] = store.list_trials()
    # the race failed loading its track, before a trial of its own: the experiment stored the failure
    why = "does not use the track parameter(s) bulk_size, target, time_period"
    assert trial.status == "failed" and trial.error and why in trial.error, trial
    assert trial.user_tags["experiment"] == "nightly-site" and trial.user_tags["variant"] == "paced"
    site = tmp_path / "site"
    capsys.readouterr()
    assert main(["history", "site", str(f), f"--output={site}"]) == 0, capsys.readouterr().err
    [night] = (site / "nights" / "nightly-site").glob(f"{trial.user_tags['experiment-run'].lower()}*.html")
    assert why in night.read_text() and "failed" in night.read_text()
    assert why in (site / "nightly-site.html").read_text()  # the experiment page lists the failed night
