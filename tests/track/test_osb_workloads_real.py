"""The real opensearch-benchmark-workloads tree (``../shared/tracks-real/osb-workloads``, commit 255694f3): at least
16 of its 18 workloads load as ``bench info --workload-path`` loads them, the rest are refused in one line naming the
construct; as ``bench race`` loads them (the default test procedure runnable), the ones listed keep loading. Offline,
nothing starts."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from bench.track import notices
from bench.track.loader import load_track
from bench.util.errors import BenchError
from tests.support.checkout import ROOT

# bench info loads these (2026-11-26). vectorsearch declares its vector data sets as corpora (bench reads them
# from data_set_path only); neural_search needs its index_name/index_body workload params.
INFO_LOADS = {"big5", "clickbench", "eventdata", "geonames", "geopoint", "geopointshape", "geoshape", "http_logs",
              "nested", "noaa", "noaa_semantic_search", "nyc_taxis", "percolator", "pmc", "so",
              "treccovid_semantic_search"}
# ... and a race: the default test procedure runnable (treccovid's needs the ML Commons model operations).
RACE_LOADS = INFO_LOADS - {"treccovid_semantic_search"}
REFUSED = {"vectorsearch": "vector data set, which bench reads from a file only", "neural_search": "--workload-params=index_name:VALUE"}


def test_osb_workloads_load_as_bench_info_loads_them(real_track_trees):
    root = real_track_trees / "osb-workloads"
    loads, refused = set(), {}
    for d in sorted(p.parent for p in root.glob("*/workload.json")):
        try:
            with notices.silenced():
                load_track(d, {}, ignore_unused=True, offline=True)
            loads.add(d.name)
        except BenchError as e:
            refused[d.name] = str(e)
    assert len(loads) + len(refused) == 18
    assert len(loads) >= 16 and INFO_LOADS <= loads, refused
    for name, reason in refused.items():
        assert "\n" not in reason, reason
        if name in REFUSED:
            assert REFUSED[name] in reason, reason


def test_osb_workloads_load_as_a_race_loads_them(tmp_path, real_track_trees):
    env = {**os.environ, "BENCH_HOME": str(tmp_path / "home")}
    p = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "rally_tracks_compat.py"),
                        str(real_track_trees / "osb-workloads"), "--json", "--offline"], capture_output=True, text=True,
                       env=env, cwd=ROOT, timeout=1200)
    assert p.returncode == 0, p.stderr[-2000:]
    rows = {r["track"]: r for r in map(json.loads, p.stdout.splitlines())}
    assert len(rows) == 18
    loads = {t for t, r in rows.items() if r["loads"]}
    assert RACE_LOADS <= loads, {t: rows[t]["reason"] for t in RACE_LOADS - loads}
    for r in rows.values():
        assert r["loads"] or ("\n" not in r["reason"] and "bench crashed" not in r["reason"]), r
    assert "delete-ml-model" in rows["treccovid_semantic_search"]["reason"]
