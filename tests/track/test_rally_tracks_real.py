"""The real rally-tracks tree (``../shared/tracks-real/rally-tracks``, elastic/rally-tracks at cff4b31f): every track
that loads today keeps loading, as ``bench info --track-path`` / ``bench race`` load it (default challenge, every
construct checked), through ``benchmarks/rally_tracks_compat.py``. Offline: a track whose pip dependencies are not
installed is refused in one line naming them, never fetched. The one dependency PyPI serves as a wheel (elastic/security's
``geneve``) is installed once into the test cache (``$BENCH_CACHE/track-libs``, as the engines' archives are) and
given to bench as its libs folder; the others cannot be had here (``pytrec_eval`` downloads trec_eval from GitHub
while it builds, elastic/endpoint's archive is on GitHub)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from bench.track.dependencies import pip_command, satisfied
from tests.support.checkout import ROOT
from tests.support.esnode import default_cache

# Loading on 2026-11-27 (offline). A track leaving this list is a regression; one joining it is progress: add it.
LOADS = {
    "big5", "cohere_vector", "dense_vector", "elastic/apm", "elser-ingest-speedtest", "eql", "esql", "geonames",
    "geopoint", "geopointshape", "geoshape", "github_archive", "has_privileges", "has_privileges_bystander",
    "http_logs", "joins", "k8s_metrics", "metricbeat", "msmarco-jina-10m-vector", "nested", "noaa", "nyc_taxis",
    "openai_vector", "percolator", "pmc", "random_vector", "so", "so_vector", "sql", "tsdb", "tsdb_k8s_queries",
    "wiki_en_cohere_vector_int8", "wikipedia",
    # 2026-11-28: track processors that add corpora, challenge parameters, esrally's runner_for/unwrap
    "elastic/logs", "elastic/security",
}
# Refused only because their pip dependencies are not installed (offline; the refusal names the pip command).
NEEDS_DEPENDENCIES = {"elastic/endpoint", "msmarco-passage-ranking", "msmarco-v2-vector", "search/mteb/dbpedia"}
# What the test installs into the cache first (elastic/security's dependencies that PyPI has as wheels).
CACHED_DEPENDENCIES = ["geneve==0.3.0"]


def cached_track_libs() -> Path:
    """A libs folder holding CACHED_DEPENDENCIES, installed from PyPI the first time (like the engines' archives,
    from Maven Central)."""
    libs = Path(default_cache()) / "track-libs"
    missing = [d for d in CACHED_DEPENDENCIES if not satisfied(d, libs, libs)]
    if missing:
        p = subprocess.run(pip_command(missing, libs), capture_output=True, text=True, timeout=900)
        assert p.returncode == 0, f"installing {missing} from PyPI into {libs} failed: {p.stderr[-1500:]}"
    return libs


def test_every_real_track_that_loads_keeps_loading(tmp_path, real_track_trees):
    real = real_track_trees / "rally-tracks"
    env = {**os.environ, "BENCH_HOME": str(tmp_path / "home")}
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "libs").symlink_to(cached_track_libs(), target_is_directory=True)
    p = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "rally_tracks_compat.py"), str(real), "--json",
                        "--offline"], capture_output=True, text=True, env=env, cwd=ROOT, timeout=1200)
    assert p.returncode == 0, p.stderr[-2000:]
    rows = {r["track"]: r for r in map(json.loads, p.stdout.splitlines())}
    assert len(rows) == 39
    loads = {t for t, r in rows.items() if r["loads"]}
    lost = {t: rows[t]["reason"] for t in LOADS - loads}
    assert not lost, f"real tracks that no longer load: {lost}"
    for track, r in rows.items():
        if not r["loads"]:
            # every refusal is one line, not a crash: a dependency not installed, or a construct named
            assert "\n" not in r["reason"] and "bench crashed" not in r["reason"], (track, r["reason"])
            if track in NEEDS_DEPENDENCIES:
                assert "--offline forbids installing" in r["reason"], (track, r["reason"])
    assert len(loads) >= len(LOADS) >= 35
