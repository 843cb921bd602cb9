"""Ingest plus search on the real OpenSearch pair (tests/support/ccr_pair.py): the nginx track's
``baseline-with-search`` on the leader alone, then ``ccr-with-search`` on the pair, as one experiment. While the
leader indexes, a search task at a target throughput queries the leader (and, in the CCR race, one queries the
follower index while it replicates); the study shows each search task's latency per cluster, with and without CCR."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from bench.cli import main
from bench.race.experiment import load_experiment, runs_of
from bench.reporting.study import load_study_table, render_study_markdown
from bench.trials.sqlite import TrialStore
from bench.trials.summary import stored_summary
from tests.support.ccr_pair import CcrPairInfo, http, os_ccr_pair  # noqa: F401 (the session fixture)

pytestmark = pytest.mark.cluster
INDEX = "nginx"  # the built-in track's index


def _query_total(url: str) -> int:
    """Searches the index's primaries answered (one shard: one per search), as the cluster counts them."""
    status, body = http("GET", f"{url}/{INDEX}/_stats/search")
    assert status == 200, body
    return int(body["indices"][INDEX]["primaries"]["search"]["query_total"])


def _experiment(pair: CcrPairInfo, path: Path) -> Path:
    leader = pair.leader_url.removeprefix("http://")
    exp = {
        "name": "ingest-search-live",
        "baseline": "baseline-with-search",
        "race": {"track": "nginx",
                 "track-params": {"doc_count": 6000, "bulk_size": 500, "bulk_indexing_clients": 1,
                                  "warmup_time_period": 0, "search_target_throughput": 20}},
        "variants": {
            "baseline-with-search": {"challenge": "baseline-with-search", "target-hosts": f"default:{leader}"},
            "ccr-with-search": {"challenge": "ccr-with-search", "target-hosts": pair.target_hosts},
        },
        "study": {"indexing-task": {"baseline-with-search": "index-append", "ccr-with-search": "index-append"},
                  "clusters": {"default": "leader"},
                  "search-tasks": {"search": "leader", "search-follower": "follower"}},
    }
    path.write_text(json.dumps(exp))  # JSON is YAML
    return path


@pytest.mark.timeout(600)
def test_search_latency_on_leader_and_follower_with_and_without_ccr(os_ccr_pair: CcrPairInfo,  # noqa: F811
                                                                    tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    os_ccr_pair.fresh(INDEX)
    file = _experiment(os_ccr_pair, tmp_path / "ingest-search.yml")
    started = time.monotonic()
    try:
        rc = main(["--quiet", "experiment", str(file), f"--report-file={tmp_path / 'study.md'}"])
        # what each cluster itself counted: the CCR race's searches reached the leader's and the follower's index
        searched = {name: _query_total(url) for name, url in (("search", os_ccr_pair.leader_url),
                                                               ("search-follower", os_ccr_pair.follower_url))}
    finally:
        os_ccr_pair.fresh(INDEX)
    out = capsys.readouterr().out
    assert rc == 0, out
    exp = load_experiment(file)
    with TrialStore() as store:
        [run_id] = runs_of(store, exp.name)
        table = load_study_table(store, exp, run_id)
        trials = {t.user_tags["variant"]: t for t in runs_of(store, exp.name)[run_id]}
        ccr = stored_summary(store, trials["ccr-with-search"].id)
    print(f"\ningest+search experiment took {time.monotonic() - started:.0f} s\n" + render_study_markdown(table))
    # the race's own summary: a search task per cluster, each answered, while the leader indexed
    assert ccr is not None
    tasks = {t.task: t for t in ccr.tasks}
    for name in ("search", "search-follower"):
        assert tasks[name].requests > 0 and tasks[name].error_rate == 0 and tasks[name].latency[50.0] > 0
        assert searched[name] >= tasks[name].requests, (name, searched, tasks[name].requests)
    assert ccr.section("ccr")["followers"][0]["follower_docs"] == 6000
    rows = {r.label: r for r in table.rows}
    leader = rows["50th percentile latency (search) [default vs leader]"]
    assert all(c.value is not None and c.value > 0 for c in leader.cells)  # baseline and ccr
    assert leader.cells[1].diff_pct is not None and leader.higher_is_better is False
    follower = rows["50th percentile latency (search) [follower]"]
    assert follower.cells[0].value is None and follower.cells[1].value == tasks["search-follower"].latency[50.0]
    assert rows["Error rate (search) [follower]"].cells[1].value == 0
    assert "latency (search) [follower]" in (tmp_path / "study.md").read_text()
