"""The release repository, as users get it: an official-layout archive downloaded, verified against its
``.sha512``, run on its bundled JDK; ``--runtime-jdk``; the fallback to Maven's build when the official site
cannot be reached; and what the trial, ``bench show`` and ``bench compare`` then say.

The site is a local HTTP server (tests/support/official_archives.py: the real Maven build plus this machine's JDK in the
official layout); bench.ini points the release repository at it with Rally's key.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.trials.sqlite import TrialStore
from tests.support.esnode import default_cache
from tests.support.official_archives import (
    bundled_jdk_version,
    official_archive,
    release_ini,
    release_name,
    release_site,
)

pytestmark = pytest.mark.cluster
VERSION = "8.19.21"


@pytest.fixture(scope="module")
def site() -> Iterator[tuple[str, Path]]:
    folder = Path(default_cache()) / "test-official-archives"
    archive = official_archive("elasticsearch", VERSION, folder)
    with release_site(folder) as base:
        yield base, archive


def _bench(home: Path, cache: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if k != "BENCH_DISTRIBUTION_REPOSITORY"}
    full.update({"BENCH_HOME": str(home), "BENCH_CACHE": str(cache), "COLUMNS": "200", **env})
    return subprocess.run([sys.executable, "-m", "bench", *args], env=full, capture_output=True, text=True,
                          timeout=600, cwd=home.parent)


def _trials(home: Path) -> list:
    os.environ["BENCH_HOME"] = str(home)
    with TrialStore() as store:
        return sorted(store.list_trials(), key=lambda t: t.start_time)


def test_release_archive_runs_on_its_bundled_jdk_and_falls_back_in_one_line(site, tmp_path: Path) -> None:
    base, archive = site
    home, cache = tmp_path / "home", tmp_path / "cold-cache"
    home.mkdir()
    (home / "bench.ini").write_text(release_ini(base))
    # No usable system Java named anywhere bench looks first: the bundled JDK must be what runs.
    broken = {"JAVA_HOME": str(tmp_path / "no-jdk"), "ES_JAVA_HOME": str(tmp_path / "no-jdk")}
    race = ("race", "--track=nginx", "--test-mode", "--car=defaults,512mheap", "--quiet")
    proc = _bench(home, cache, *race, **broken)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Note:" not in proc.stderr  # no fallback: the release archive was there
    assert "installed from release elasticsearch-8.19.21-" in proc.stdout

    [trial] = _trials(home)
    assert trial.status == "complete" and trial.car == ["defaults", "512mheap"]
    facts = trial.clusters[0]
    dist, java = facts["distribution"], facts["java"]
    published = (archive.parent / f"{archive.name}.sha512").read_text().split()[0]
    assert dist["repository"] == "release" and dist["flavour"] == "official"
    assert dist["url"] == f"{base}/{release_name('elasticsearch', VERSION)}"
    assert dist["checksum"] == f"sha512:{published}"
    assert published == hashlib.sha512(archive.read_bytes()).hexdigest()
    assert dist["bundled_jdk"] is True and "x-pack-core" in dist["modules"]
    assert java["source"] == "bundled" and java["home"].endswith("/jdk") and java["version"] == bundled_jdk_version()
    assert facts["car"] == "defaults+512mheap"
    # The node itself says which JVM it ran (kept with the trial's logs).
    logs = "".join(p.read_text(errors="replace") for p in (home / "trials" / trial.id / "logs").rglob("*.log"))
    assert f"/{trial.id}/default/default-0/install/jdk], using bundled JDK [true]" in logs

    shown = _bench(home, cache, "show", trial.id[:8])
    assert shown.returncode == 0, shown.stderr
    assert f"release {release_name('elasticsearch', VERSION)} (sha512 {published[:12]}" in shown.stdout
    assert f"bundled JDK {bundled_jdk_version()}" in shown.stdout

    # The site unreachable (nothing listens on port 9): one line, then Maven's build, said in the trial too.
    (home / "bench.ini").write_text(release_ini("http://127.0.0.1:9"))
    proc = _bench(home, tmp_path / "cache", *race, BENCH_CACHE=default_cache())
    assert proc.returncode == 0, proc.stderr[-2000:]
    notes = [line for line in proc.stderr.splitlines() if line.startswith("Note:")]
    assert len(notes) == 1 and "cannot reach 127.0.0.1" in notes[0] and "integ-test build" in notes[0], proc.stderr
    fallback = _trials(home)[-1]
    assert fallback.status == "complete"
    dist = fallback.clusters[0]["distribution"]
    assert dist["repository"] == "maven-integ-test" and dist["flavour"] == "minimal"
    assert dist["fallback"].startswith("127.0.0.1 unreachable (")
    assert fallback.clusters[0]["java"]["source"] == "system"
    assert "fell back from release" in _bench(home, cache, "show", fallback.id[:8]).stdout

    # compare says the two sides ran different builds on different JDKs
    compared = _bench(home, cache, "compare", trial.id[:8], fallback.id[:8])
    assert compared.returncode == 0, compared.stderr
    out = " ".join(compared.stdout.split())
    assert "Trials differ in distributions" in out and "release (official" in out and "maven-integ-test (minimal" in out
    assert "Trials differ in JDKs" in out

    # Chosen explicitly, the release repository never falls back.
    proc = _bench(home, tmp_path / "cache", *race, "--distribution-repository=release", BENCH_CACHE=default_cache())
    assert proc.returncode != 0
    assert proc.stderr.strip().count("\n") == 0 and "chosen explicitly" in proc.stderr, proc.stderr


def test_runtime_jdk_picks_a_system_jdk_of_that_major(site, tmp_path: Path) -> None:
    base, _ = site
    home = tmp_path / "home"
    home.mkdir()
    (home / "bench.ini").write_text(release_ini(base))
    cache = Path(default_cache())
    major = (bundled_jdk_version() or "17").split(".")[0]
    proc = _bench(home, cache, "race", "--track=nginx", "--test-mode", "--car=defaults,512mheap", "--quiet",
                  f"--runtime-jdk={major}", **{f"JAVA{major}_HOME": "/usr/lib/jvm/java-17-openjdk-amd64"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    [trial] = _trials(home)
    java = trial.clusters[0]["java"]
    assert (java["source"], java["found_by"], java["major"]) == ("system", f"JAVA{major}_HOME", int(major))
    logs = "".join(p.read_text(errors="replace") for p in (home / "trials" / trial.id / "logs").rglob("*.log"))
    assert "using bundled JDK [false]" in logs


@pytest.mark.parametrize(("args", "env", "line"), [
    (("--runtime-jdk=bundled", "--distribution-repository=maven-integ-test"), {},
     "--runtime-jdk=bundled: the maven-integ-test build of elasticsearch 8.19.21 has no bundled JDK"),
    (("--runtime-jdk=11", "--distribution-repository=maven-integ-test"), {"JAVA11_HOME": "/usr/lib/jvm/java-17-openjdk-amd64"},
     "JAVA11_HOME=/usr/lib/jvm/java-17-openjdk-amd64 is not a JDK 11"),
    (("--runtime-jdk=latest",), {}, "--runtime-jdk=latest: use bundled or a JDK major version such as 17"),
    (("--distribution-repository=nightly",), {}, "unknown distribution repository 'nightly' for elasticsearch"),
])
def test_jdk_and_repository_mistakes_are_one_line(tmp_path: Path, args: tuple[str, ...], env: dict[str, str],
                                                   line: str) -> None:
    home = tmp_path / "home"
    home.mkdir()
    proc = _bench(home, Path(default_cache()), "race", "--track=nginx", "--test-mode", "--quiet", *args, **env)
    assert proc.returncode == 2, proc.stderr
    assert line in proc.stderr and "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
