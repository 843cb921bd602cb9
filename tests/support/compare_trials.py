"""Real trials for the compare/report tests, made once per session against the session cluster.

- 6 trials of one configuration (unthrottled bulk, 1 client, 2 s over a looped corpus), tagged group=g1 / g2,
  run interleaved
  (g1, g2, g1, ...) so drift over time does not favour one group; node-stats + host telemetry every 0.5 s;
- 3 + 3 trials of two genuinely different configurations: bulks of 10 docs throttled to 10 vs 2.5 requests/s
  (tagged rate=fast / rate=slow) -- a 4x throughput difference that the noise of this machine cannot hide
  (unthrottled, 1 vs 4 clients, it can: on 2 shared cores three identical runs differ by 2x).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import pytest

from bench.cli import main
from bench.trials.sqlite import TrialStore
from tests.support.esnode import default_cache

TRACK = """{
  "version": 2,
  "description": "compare tests: bulk indexing of a small local corpus",
  "indices": [{"name": "cmp", "body": "index.json"}],
  "corpora": [{"name": "c", "documents": [{"source-file": "docs.json", "document-count": 3000,
                                           "target-index": "cmp"}]}],
  "schedule": [
    {"operation": {"name": "delete", "operation-type": "delete-index"}},
    {"operation": {"name": "create", "operation-type": "create-index"}},
    {"operation": {"name": "health", "operation-type": "cluster-health", "index": "cmp",
                   "request-params": {"wait_for_status": "green"}, "retry-until-success": true}},
    {"name": "index", "clients": 1,
     {% if target %}"target-throughput": {{ target }},{% endif %}
     {% if time_period %}"time-period": {{ time_period }},{% endif %}
     "operation": {"name": "load", "operation-type": "bulk", "bulk-size": {{ bulk_size | default(100) }},
                   {% if time_period %}"looped": true,{% endif %}
                   "ingest-percentage": {{ ingest_percentage | default(100) }}}}
  ]
}
"""


@dataclass
class CompareTrials:
    home: Path
    track: Path
    groups: dict[str, list[str]]  # tag value -> trial ids


def write_compare_track(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "docs.json").write_text("".join(
        json.dumps({"n": i, "message": f"GET /item/{i} HTTP/1.1 200 {i * 7 % 5000}"}) + "\n" for i in range(3000)))
    # Explicit mappings: the first bulk does not wait for a dynamic mapping update.
    (root / "index.json").write_text(json.dumps({
        "settings": {"number_of_shards": 1, "number_of_replicas": 0},
        "mappings": {"dynamic": "strict", "properties": {"n": {"type": "long"}, "message": {"type": "text"}}}}))
    (root / "track.json").write_text(TRACK)
    return root


def race(track: Path, target: str, *args: str) -> str:
    assert main(["--quiet", "race", f"--track-path={track}", f"--target-hosts={target}", *args]) == 0
    with TrialStore() as store:
        return store.list_trials(1)[0].id


# Test modules import the fixture, which makes one fixture per module: the trials are made once all the same.
_MADE: list[CompareTrials] = []


@pytest.fixture(scope="session")
def compare_trials(tmp_path_factory: pytest.TempPathFactory, es_target_session: str) -> CompareTrials:
    if _MADE:
        return _MADE[0]
    base = tmp_path_factory.mktemp("compare-trials")
    home = base / "bench-home"
    saved = {k: os.environ.get(k) for k in ("BENCH_HOME", "BENCH_CACHE")}
    os.environ["BENCH_HOME"] = str(home)
    os.environ["BENCH_CACHE"] = default_cache()
    track = write_compare_track(base / "track")
    groups: dict[str, list[str]] = {"g1": [], "g2": [], "fast": [], "slow": []}
    try:
        for _ in range(3):
            for g in ("g1", "g2"):
                # Time-bounded (looped corpus): however fast the machine, every run spans several one-second
                # buckets, so the throughput-over-time plot and per-second statistics always exist.
                groups[g].append(race(track, es_target_session, f"--user-tag=group:{g}", "--telemetry=node-stats,host",
                                      "--track-params=time_period:2",
                                      "--telemetry-params=node-stats-sample-interval:0.5,host-sample-interval:0.5"))
            # 21 bulks of 10 docs at 10/s vs 6 at 2.5/s: both 2-2.5 s, so start-up costs weigh alike, and each run
            # spans more than one one-second bucket (the report's throughput-over-time plot needs two).
            for g, target, pct in (("fast", 10, 7), ("slow", 2.5, 2)):
                groups[g].append(race(track, es_target_session, f"--user-tag=rate:{g}",
                                      f"--track-params=target:{target},bulk_size:10,ingest_percentage:{pct}"))
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    _MADE.append(CompareTrials(home=home, track=track, groups=groups))
    return _MADE[0]


@pytest.fixture(scope="session")
def es_target_session(es_cluster) -> str:
    return ",".join(h.removeprefix("http://") for h in es_cluster.hosts)
