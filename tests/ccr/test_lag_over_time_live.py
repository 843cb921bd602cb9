"""A CCR race's report has the follower's lag time per interval, on the real OpenSearch pair (tests/support/ccr_pair.py):
the markdown report shows the table, and its windows add up to the whole run's lag rows."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.ccr.section import SECTION, CcrSection
from bench.cli import main
from bench.trials.sqlite import TrialStore
from tests.support.ccr_pair import CcrPairInfo, os_ccr_pair, write_ccr_track  # noqa: F401 (the session fixture)

pytestmark = pytest.mark.cluster


@pytest.mark.timeout(600)
def test_a_ccr_race_reports_its_lag_per_interval(os_ccr_pair: CcrPairInfo, tmp_path: Path,  # noqa: F811
                                                  bench_home: Path) -> None:
    index = "lag-over-time"
    os_ccr_pair.fresh(index)
    track = write_ccr_track(tmp_path / "track", docs=1000)
    report = tmp_path / "report.md"
    try:
        assert main(["--quiet", "race", f"--track-path={track}", f"--target-hosts={os_ccr_pair.target_hosts}",
                     f"--track-params=index:{index}", "--telemetry-params=ccr-stats-sample-interval:0.5",
                     "--report-format=markdown", f"--report-file={report}"]) == 0
    finally:
        os_ccr_pair.stop_replication(index)
    text = report.read_text()
    title = next(line for line in text.splitlines() if line.startswith("## CCR lag time per interval of "))
    assert title.endswith(f": follower/{index}")
    table = text[text.index(title):].split("\n\n")[1].splitlines()
    assert table[0].split("|")[1].strip() == "From" and len(table) == 2 + 10  # header, rule, ten intervals
    with TrialStore() as store:
        [trial] = store.list_trials(1)
        summary = store.summary(trial.id)
    assert summary is not None
    [f] = [f for f in CcrSection.model_validate(summary.sections[SECTION]).followers if f.index == index]
    ws = f.lag_over_time
    assert sum(w.samples for w in ws) == f.lag_samples > 3  # every sample with a known lag is in a window
    assert max(w.max for w in ws if w.max is not None) == f.lag_s_max
    print(f"\n{title}\n" + "\n".join(table))
