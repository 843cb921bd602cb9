"""A local git track repository made from the real rally-tracks tree (../shared/tracks-real), standing in for
github.com/elastic/rally-tracks, which tests never reach; and the bench.ini that points bench at it."""

from __future__ import annotations

import bz2
import json
import random
import shutil
import subprocess
from pathlib import Path

from tests.support.shared_tree import shared_path

REAL_TREE = shared_path("tracks-real", "rally-tracks")
# A part of the real tree: enough for names, nesting and a shared name with a built-in track, quick to commit.
TRACKS = ("geonames", "http_logs", "pmc", "nested", "elastic/logs", "elastic/shared")
BRANCH_7_DESCRIPTION = "POIs from Geonames (the repository's branch 7)"


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True,
                          env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                               "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin", "HOME": str(cwd)}).stdout


def make_repository(root: Path) -> Path:
    """A git repository of real tracks with branches ``master`` and ``7`` (geonames' description differs)."""
    root.mkdir(parents=True)
    for name in TRACKS:
        shutil.copytree(REAL_TREE / name, root / name)
    git(root, "init", "--quiet", "--initial-branch=master")
    git(root, "add", "-A")
    git(root, "commit", "--quiet", "-m", "real tracks")
    git(root, "checkout", "--quiet", "-b", "7")
    track = root / "geonames" / "track.json"
    track.write_text(track.read_text().replace('"POIs from Geonames"', json.dumps(BRANCH_7_DESCRIPTION)))
    git(root, "commit", "--quiet", "-am", "branch 7")
    git(root, "checkout", "--quiet", "master")
    return root


def point_bench_at(home: Path, repository: Path, name: str = "default") -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "bench.ini").write_text(f"[tracks]\n{name}.url = file://{repository}\n")


def geonames_test_corpus(corpus_dir: Path, docs: int = 1000, seed: int = 7) -> Path:
    """The first 1,000 documents of the geonames corpus file (all a test-mode race reads), with fields of its
    strict mapping: the real file lives on a download site these machines cannot reach."""
    rnd = random.Random(seed)
    lines = [json.dumps({"geonameid": i, "name": f"place {i}", "feature_class": rnd.choice("PTSAHLRUV"),
                         "location": [round(rnd.uniform(-180, 180), 5), round(rnd.uniform(-90, 90), 5)],
                         "elevation": rnd.randint(0, 4000), "timezone": "Europe/Vienna", "cc2": "AT"})
             for i in range(docs)]
    target = corpus_dir / "geonames" / "documents-2.json.bz2"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(bz2.compress(("\n".join(lines) + "\n").encode()))
    return target
