"""Track repositories as in Rally, on a local git repository of the real rally-tracks tree: --track=NAME finds the
repository's track, the branch follows the cluster's version, --track-revision, bench list tracks, render-track."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.cli import main
from bench.track.loader import builtin_tracks_dir
from bench.track.repository import TrackRepository
from bench.track.resolve import resolve_track
from bench.track.versions import best_match
from bench.util.errors import ConfigError
from tests.support.track_repo import BRANCH_7_DESCRIPTION, git, make_repository, point_bench_at

pytestmark = pytest.mark.usefixtures("real_track_trees")


@pytest.fixture(scope="module")
def origin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_repository(tmp_path_factory.mktemp("origin") / "rally-tracks")


@pytest.fixture
def repo_home(origin: Path, bench_home: Path) -> Path:
    point_bench_at(bench_home, origin)
    return bench_home


def test_best_match_is_rallys_choice():
    # Rally's own cases (esrally tests/utils/versions_test.py)
    assert best_match(["1.7", "2", "5.0.0-alpha1", "5", "master"], "6.0.0-alpha1") == "master"
    assert best_match(["1.7", "2", "5.0.0-alpha1", "5", "master"], "5.1.0-SNAPSHOT") == "5"
    assert best_match(["1.7", "2", "5.0.0-alpha1", "5", "master"], None) == "master"
    assert best_match(["1.7", "2", "5.0.0-alpha1", "5", "master"], "0.4") is None
    assert best_match(["7", "7.10.2", "7.11", "7.2", "5", "6", "master"], "7.10.2") == "7.10.2"
    assert best_match(["7", "7.10", "master"], "7.1.0") == "7"
    assert best_match(["7", "7.11", "7.2", "5", "6", "master"], "7.11.0") == "7.11"
    assert best_match(["7", "7.11", "7.2", "5", "6", "master"], "7.12.0") == "7.11"
    assert best_match(["7", "7.11", "7.2", "5", "6", "master"], "7.3.0") == "7.2"
    assert best_match(["7", "7.11", "7.2", "5", "6", "master"], "7.10.0") == "7.2"
    assert best_match(["7", "7.1", "7.11.1", "7.11.0", "7.2", "5", "6", "master"], "7.12.0") == "7.2"
    assert best_match(["7", "7.11", "7.2", "5", "6", "master"], "7.1.0") == "7"
    assert best_match(["8.15", "9.2", "master"], "9.3.5") == "9.2"
    assert best_match(["8.15", "9.0", "master"], "9.1.0") == "9.0"


def test_branch_follows_the_version_and_the_source_names_the_commit(repo_home, origin):
    master = git(origin, "rev-parse", "master").strip()
    seven = git(origin, "rev-parse", "7").strip()
    newer = resolve_track("geonames", None, version=lambda: "8.19.21", progress=False)
    assert newer.dir == repo_home / "tracks" / "default" / "geonames"
    assert (newer.source.kind, newer.source.branch, newer.source.revision) == ("repository", "master", master)
    assert newer.source.url == f"file://{origin}" and not newer.source.dirty
    older = resolve_track("geonames", None, version=lambda: "7.17.0", progress=False)
    assert (older.source.branch, older.source.revision) == ("7", seven)
    assert BRANCH_7_DESCRIPTION in (older.dir / "track.json").read_text()
    pinned = resolve_track("geonames", None, revision=master[:10], progress=False)
    assert pinned.source.revision == master


def test_updates_from_the_remote_unless_offline(repo_home, origin):
    first = resolve_track("geonames", None, progress=False)
    (origin / "README.md").write_text("new commit upstream\n")
    git(origin, "add", "README.md")
    git(origin, "commit", "--quiet", "-m", "upstream change")
    head = git(origin, "rev-parse", "HEAD").strip()
    offline = resolve_track("geonames", None, offline=True, progress=False)
    assert offline.source.revision == first.source.revision != head
    assert resolve_track("geonames", None, progress=False).source.revision == head
    git(origin, "reset", "--quiet", "--hard", "HEAD~1")  # the module's origin as it was


def test_built_in_names_stay_built_in_unless_a_repository_is_named(repo_home):
    built_in = resolve_track("http_logs", None, progress=False)
    assert built_in.source.kind == "built-in" and built_in.dir == builtin_tracks_dir() / "http_logs"
    real = resolve_track("http_logs", None, repository="default", progress=False)
    assert real.source.kind == "repository" and real.dir == repo_home / "tracks" / "default" / "http_logs"


def test_nested_names_unknown_names_and_unknown_repositories(repo_home):
    assert resolve_track("elastic/logs", None, progress=False).dir.name == "logs"
    with pytest.raises(Exception, match=r"unknown track 'geonamez' in track repository default .*geonames"):
        resolve_track("geonamez", None, progress=False)
    with pytest.raises(Exception, match=r"not a track name"):
        resolve_track("../etc", None, repository="default", progress=False)
    with pytest.raises(ConfigError, match=r"--track-repository=mine: no URL for it: set 'mine.url"):
        resolve_track("geonames", None, repository="mine", progress=False)
    with pytest.raises(Exception, match=r"--track-revision=nope: no such branch, tag or commit"):
        resolve_track("geonames", None, revision="nope", progress=False)


def test_offline_without_a_clone_is_one_line(bench_home, capsys):
    # a repository behind a network (a file:// one is cloned --offline: that needs no network)
    (bench_home / "bench.ini").parent.mkdir(parents=True, exist_ok=True)
    (bench_home / "bench.ini").write_text("[tracks]\ndefault.url = https://git.invalid/rally-tracks\n")
    assert main(["info", "--track=geonames", "--offline"]) == 2  # a ConfigError
    err = capsys.readouterr().err
    assert "track repository default is not cloned yet" in err and "--offline" in err and len(err.splitlines()) == 1


def test_info_list_and_render_track_read_the_repository(repo_home, capsys):
    assert main(["--quiet", "info", "--track=geonames", "--distribution-version=7.17.0"]) == 0
    assert BRANCH_7_DESCRIPTION in capsys.readouterr().out
    assert main(["--quiet", "list", "tracks"]) == 0
    out = capsys.readouterr().out
    listed = out.split("Track repository default")[1]
    assert "geonames" in listed and "POIs from Geonames" in listed and "elastic/logs" in listed
    assert "nginx" in out.split("Track repository default")[0]  # built-in tracks first
    out_file = repo_home / "geonames.json"
    assert main(["--quiet", "render-track", "--track=geonames", "--track-params=number_of_shards:3",
                 f"--output-path={out_file}"]) == 0
    rendered = json.loads(out_file.read_text())
    assert rendered["description"] == "POIs from Geonames" and rendered["indices"][0]["name"] == "geonames"
    capsys.readouterr()
    assert main(["--quiet", "render-track", "--track=nginx"]) == 0
    assert json.loads(capsys.readouterr().out)["challenges"]


def test_a_local_change_is_recorded_as_such(repo_home):
    resolved = resolve_track("geonames", None, progress=False)
    (resolved.dir / "README.md").write_text("edited\n")
    again = TrackRepository.open("default", offline=True, progress=False).source()
    assert again.dirty and "with local changes" in again.describe()
