"""The fault matrix's advice (docs/guide/failures.md#the-fault-matrix): a distribution version that does not exist,
a track repository out of reach, one used --offline on first use, an unknown --track-revision, and what `bench info`
says it read. Each ends in one line that says what happened and what to do instead, with the right exit code.

Download sites are HTTP servers on 127.0.0.1 (tests/support/http_serving.py), track repositories small local git
repositories of one-track folders (tests/support/track_repo.py's git helper); nothing reaches beyond 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench.provision import distribution
from bench.results.exit_status import EXIT_BAD_INPUT, EXIT_FAILED, EXIT_OK
from bench.util.errors import ProvisionError
from benchmarks.nullsink import free_port
from tests.support.checkout import ROOT
from tests.support.http_serving import files_handler, serving
from tests.support.track_repo import git

pytestmark = [pytest.mark.timeout(180), pytest.mark.usefixtures("fault_injection")]


def _bench(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "BENCH_HOME": str(home), "BENCH_CACHE": str(home / "cache")}
    env.pop("BENCH_DISTRIBUTION_REPOSITORY", None)  # the repository is the one bench.ini or the option names
    return subprocess.run([sys.executable, "-m", "bench", "--quiet", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=150, env=env)


def _one_line(done: subprocess.CompletedProcess[str]) -> str:
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    assert "Traceback" not in done.stderr, done.stderr
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    return lines[0]


def _search_track(folder: Path, description: str = "one search") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "track.json").write_text(json.dumps({
        "version": 2, "description": description, "indices": [{"name": "i"}],
        "schedule": [{"operation": {"name": "s", "operation-type": "search", "index": "i"}, "iterations": 1}]}))
    return folder


def _tracks_repository(root: Path, branches: list[str]) -> Path:
    """A git repository with the track ``t1`` on ``master`` and on each of ``branches`` (described by the branch)."""
    _search_track(root / "t1", "on master")
    git(root, "init", "--quiet", "--initial-branch=master")
    git(root, "add", "-A")
    git(root, "commit", "--quiet", "-m", "t1")
    for branch in branches:
        git(root, "checkout", "--quiet", "-b", branch, "master")
        _search_track(root / "t1", f"on {branch}")
        git(root, "commit", "--quiet", "-am", branch)
    git(root, "checkout", "--quiet", "master")
    return root


def _ini(home: Path, text: str) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "bench.ini").write_text(text)


# --- distributions ---------------------------------------------------------------------------------------------

def _obtain(home: Path, version: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """The one line ``obtain`` fails with, and its exit code: what a race started from a distribution prints
    (called here in-process, as a race would start an engine node right after the download)."""
    monkeypatch.setenv("BENCH_HOME", str(home))
    monkeypatch.setenv("BENCH_CACHE", str(home / "cache"))
    with pytest.raises(ProvisionError) as failed:
        distribution.obtain("elasticsearch", version, "release")
    assert "\n" not in str(failed.value)
    return f"{failed.value.exit_code} {failed.value}"


def test_a_version_that_does_not_exist_is_not_found_not_a_checksum_to_publish(tmp_path, monkeypatch):
    """Neither the archive nor its checksum is on the mirror: the version is not there. Advising to publish a
    checksum or skip verification would send the user the wrong way."""
    home = tmp_path / "home"
    with serving(files_handler({})) as server:
        port = server.server_address[1]
        _ini(home, f"[distributions]\nrelease.url = http://127.0.0.1:{port}/es-{{{{VERSION}}}}.tar.gz\n")
        line = _obtain(home, "8.99.0", monkeypatch)
    assert line.startswith(f"{EXIT_BAD_INPUT} elasticsearch 8.99.0 was not found at "
                           f"http://127.0.0.1:{port}/es-8.99.0.tar.gz (HTTP 404): check the version"), line
    assert "--distribution-path=PATH" in line
    assert f"'release.url = <URL template>' in [distributions] of {home / 'bench.ini'}" in line
    assert "must publish" not in line and "checksum: none" not in line


def test_a_version_missing_from_the_fallback_build_advises_a_mirror_of_the_release(tmp_path, monkeypatch):
    """The official site out of reach, bench falls back to Maven's build, which lacks the version too: the remedy is
    a mirror of the official archives (release.url), which the user chose by default, not of the fallback."""
    home = tmp_path / "home"
    monkeypatch.delenv("BENCH_DISTRIBUTION_REPOSITORY", raising=False)
    with serving(files_handler({})) as server:
        port = server.server_address[1]
        _ini(home, f"[distributions]\nrelease.url = http://127.0.0.1:{free_port()}/es-{{{{VERSION}}}}.tar.gz\n"
                   f"maven-integ-test.url = http://127.0.0.1:{port}/es-{{{{VERSION}}}}.zip\n")
        monkeypatch.setenv("BENCH_HOME", str(home))
        monkeypatch.setenv("BENCH_CACHE", str(home / "cache"))
        with pytest.raises(ProvisionError) as failed:
            distribution.obtain("elasticsearch", "8.99.0")
    line = str(failed.value)
    assert line.startswith(f"elasticsearch 8.99.0 was not found at http://127.0.0.1:{port}/es-8.99.0.zip (HTTP 404)")
    assert "'release.url = <URL template>'" in line and "must publish" not in line, line


def test_an_archive_without_its_checksum_keeps_the_checksum_advice(tmp_path, monkeypatch):
    """The archive is there, only its .sha512 is not: that is the mirror's to fix (or checksum: none). The server
    takes GET only, as a plain file server may: bench asks for the archive with GET when HEAD is refused."""
    home = tmp_path / "home"
    with serving(files_handler({"/es-8.19.21.tar.gz": b"not checked"})) as server:
        port = server.server_address[1]
        _ini(home, f"[distributions]\nrelease.url = http://127.0.0.1:{port}/es-{{{{VERSION}}}}.tar.gz\n")
        line = _obtain(home, "8.19.21", monkeypatch)
    assert line.startswith(f"{EXIT_FAILED} cannot fetch checksum http://127.0.0.1:{port}/es-8.19.21.tar.gz.sha512: "
                           "HTTP 404, although the archive is there; the mirror must publish it"), line
    assert "not found" not in line


def test_an_archive_not_there_without_checksum_verification_is_not_found(tmp_path, monkeypatch):
    """With no checksum to ask for, the archive's own 404 says the same."""
    monkeypatch.setenv("BENCH_CACHE", str(tmp_path / "cache"))
    with serving(files_handler({})) as server:
        url = f"http://127.0.0.1:{server.server_address[1]}/es-8.99.0.zip"
        with pytest.raises(ProvisionError, match=r"HTTP 404") as failed:
            distribution.download_archive(url, "none")
    assert type(failed.value).__name__ == "ArchiveNotFound" and failed.value.exit_code == EXIT_BAD_INPUT


# --- track repositories ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("named", [False, True], ids=["default", "named"])
def test_an_unreachable_track_repository_names_the_remedies(tmp_path, named):
    home = tmp_path / "home"
    name = "mine" if named else "default"
    url = f"http://127.0.0.1:{free_port()}/rally-tracks.git"  # nothing listens there: connection refused
    _ini(home, f"[tracks]\n{name}.url = {url}\n")
    done = _bench(home, "info", "--track=geonames", *([f"--track-repository={name}"] if named else []))
    line = _one_line(done)
    assert done.returncode == EXIT_BAD_INPUT, done.stderr
    assert f"git clone failed for track repository {name} ({url})" in line
    assert "--track-path=DIR" in line
    assert f"'{name}.url = <git URL, file:// URL or folder>' in [tracks] of {home / 'bench.ini'}" in line
    assert f"clone it into {home / 'tracks' / name} yourself and pass --offline" in line


@pytest.mark.parametrize("form", ["file-url", "folder"])
def test_a_local_repository_is_usable_offline_on_first_use(tmp_path, form):
    """A file:// URL or a folder needs no network: --offline clones it rather than refusing."""
    origin = _tracks_repository(tmp_path / "origin", ["7"])
    home = tmp_path / "home"
    _ini(home, f"[tracks]\ndefault.url = {'file://' if form == 'file-url' else ''}{origin}\n")
    done = _bench(home, "info", "--track=t1", "--offline")
    assert done.returncode == EXIT_OK, done.stderr
    assert "Description: on master" in done.stdout
    older = _bench(home, "info", "--track=t1", "--offline", "--distribution-version=7.17.0")
    assert older.returncode == EXIT_OK and "Description: on 7" in older.stdout, older.stderr
    # a repository behind a network is still not cloned --offline
    remote = tmp_path / "remote-home"
    _ini(remote, f"[tracks]\ndefault.url = http://127.0.0.1:{free_port()}/rally-tracks.git\n")
    line = _one_line(done := _bench(remote, "info", "--track=geonames", "--offline"))
    assert done.returncode == EXIT_BAD_INPUT and "is not cloned yet" in line and "--track-path" in line


def test_an_unknown_track_revision_lists_the_branches(tmp_path):
    branches = ["7", "7.10", "7.9", "8", "8.15", "8.2", "9.0", "9.1", "9.2", "feature-x"]
    origin = _tracks_repository(tmp_path / "origin", branches)
    home = tmp_path / "home"
    _ini(home, f"[tracks]\ndefault.url = file://{origin}\n")
    done = _bench(home, "info", "--track=t1", "--track-revision=8.51")
    line = _one_line(done)
    assert done.returncode == EXIT_BAD_INPUT, done.stderr
    assert "--track-revision=8.51: no such branch, tag or commit in track repository default" in line
    # named branches first, then versions newest first: the ones a user looks for
    assert line.endswith("its branches: feature-x, master, 9.2, 9.1, 9.0, 8.15, 8.2, 8 and 3 more"), line


def test_info_says_which_commit_of_the_repository_it_read(tmp_path):
    origin = _tracks_repository(tmp_path / "origin", ["7"])
    home = tmp_path / "home"
    _ini(home, f"[tracks]\ndefault.url = file://{origin}\n")
    seven = git(origin, "rev-parse", "7").strip()
    done = _bench(home, "info", "--track=t1", "--track-revision=7")
    assert done.returncode == EXIT_OK, done.stderr
    assert f"Track from: repository default (file://{origin}) 7 at {seven[:12]}" in done.stdout
    master = git(origin, "rev-parse", "master").strip()
    by_version = _bench(home, "info", "--track=t1")
    assert f"Track from: repository default (file://{origin}) master at {master[:12]}" in by_version.stdout
