"""Nightly history: the noise band (pure), and `bench experiment --history` on real stored runs -- two runs of a
small experiment against the session cluster, the second one throttled to a quarter of the first's rate, so
its baseline throughput regresses beyond any noise band; --fail-on-regression exits 3 and the gist markdown
has the trend."""

from __future__ import annotations

import pytest

from bench.cli import main
from bench.reporting.history import judge_night, noise_band
from bench.trials.sqlite import TrialStore
from tests.support.compare_trials import es_target_session, write_compare_track  # noqa: F401 - fixture


def test_noise_band_takes_the_wider_of_previous_nights_and_tonights_spread():
    low, high, source = noise_band([100.0, 110.0, 90.0], [100.0, 100.5, 99.5])
    assert source == "previous nights" and low < 60 and high > 140  # t(2)=4.30 * 10 * sqrt(4/3)
    low, high, source = noise_band([100.0], [80.0, 120.0, 100.0])
    assert source == "tonight's repetitions" and round(high - 100, 1) == 49.7  # t(2)=4.30 * 20 / sqrt(3)
    assert noise_band([100.0], [100.0]) is None and noise_band([], [1.0, 2.0]) is None
    # paced runs: identical values on every night and repetition still leave a ±2 % band
    low, high, source = noise_band([200.0, 200.0], [200.0, 200.0, 200.0])
    assert (low, high) == (196.0, 204.0) and "floor" in source


@pytest.mark.parametrize("value, higher, trend", [
    (95.0, True, "within noise"), (80.0, True, "regression"), (120.0, True, "improvement"),
    (120.0, False, "regression"), (80.0, False, "improvement"), (120.0, None, "n/a"),
])
def test_outside_the_band_is_judged_by_the_rows_direction(value, higher, trend):
    assert judge_night(value, (90.0, 110.0), higher) == trend
    assert judge_night(value, None, higher) == "not judged"


EXP = """
name: nightly
baseline: paced
repetitions: 2
order: interleaved
race:
  track-path: {track}
  target-hosts: "{target}"
  track-params: {{bulk_size: 10, time_period: 2}}
variants:
  paced: {{track-params: {{target: {rate}}}}}
  paced-small: {{track-params: {{target: {rate}, bulk_size: 5}}}}
study:
  indexing-task: {{paced: index, paced-small: index}}
"""


@pytest.mark.cluster
@pytest.mark.timeout(900)
def test_history_flags_a_real_regression_against_the_previous_night(tmp_path, es_target_session, capsys):  # noqa: F811
    track = write_compare_track(tmp_path / "track")
    first, second = tmp_path / "night1.yml", tmp_path / "night2.yml"
    first.write_text(EXP.format(track=track, target=es_target_session, rate=8))
    second.write_text(EXP.format(track=track, target=es_target_session, rate=2))  # same experiment, 4x slower

    assert main(["--quiet", "experiment", str(first), "--history=3"]) == 0
    out = capsys.readouterr().out
    assert "No previous run to compare with: tonight is the first." in out and "REGRESSION" not in out

    gist = tmp_path / "gist.md"
    rc = main(["--quiet", "experiment", str(second), "--history=3", "--fail-on-regression",
               f"--report-file={gist}"])
    out = capsys.readouterr().out
    assert rc == 3, out
    assert "REGRESSION paced: Median Throughput (indexing)" in out
    with TrialStore() as store:
        runs = {t.user_tags["experiment-run"] for t in store.list_trials(100)
                if t.user_tags.get("experiment") == "nightly" and t.status == "complete"}
    assert len(runs) == 2
    text = gist.read_text()
    assert "## History: nightly, tonight " in text and "against 1 previous run(s)" in text
    line = next(x for x in text.splitlines() if x.startswith("| paced | Median Throughput (indexing)"))
    assert "**regression**" in line and ("tonight's repetitions" in line or "2% floor" in line)
    assert "## Study: nightly" in text and "Noise band:" in text

    # without --fail-on-regression the regression is reported, not an exit code; the HTML report has both tables
    html = tmp_path / "nightly.html"
    assert main(["--quiet", "experiment", str(second), "--resume", "--history=1", "--report-format=html",
                 f"--report-file={html}"]) == 0
    assert "REGRESSION paced" in capsys.readouterr().out
    page = html.read_text()
    assert "<h2>Study: nightly, run " in page and "<h2>History: nightly, tonight " in page
    assert '<td class="regression">regression</td>' in page


@pytest.mark.parametrize("args, needle", [
    (["--fail-on-regression"], "--fail-on-regression needs --history N"),
    (["--history=0"], "--history 0: use 1 or more"),
    (["--history=2"], "has no 'study:' block"),
    (["--repetitions=0"], "--repetitions 0: use 1 or more"),
])
def test_bad_history_options_are_one_line_before_any_race(tmp_path, capsys, args, needle):
    f = tmp_path / "exp.yml"
    f.write_text("name: x\nrace: {track: nginx, target-hosts: '127.0.0.1:9'}\nvariants: {a: {}, b: {}}\n")
    rc = main(["experiment", str(f), *args])
    out, err = capsys.readouterr()
    lines = [x for x in err.splitlines() if x.strip()]
    assert rc != 0 and len(lines) == 1 and needle in lines[0] and "Traceback" not in err
    assert "races planned" not in out
