"""Track repositories, as Rally has them: a git repository of tracks, cloned into the bench home.

``--track-repository=NAME`` (default ``default``) names a repository whose URL is ``NAME.url`` in ``[tracks]`` of
``$BENCH_HOME/bench.ini`` (Rally's ``rally.ini`` key; a ``file://`` URL or a local path works too); ``default`` is
elastic/rally-tracks unless the file says otherwise. The clone lives in ``$BENCH_HOME/tracks/NAME``. Unless
``--offline``, bench fetches it first, then checks out ``--track-revision`` if given, else the branch that fits
the cluster's version (``bench.track.versions``, Rally's choice) and fast-forwards it to the remote's. A track is
a folder of the repository holding ``track.json`` (nested names such as ``elastic/logs`` as in Rally).

OpenSearch Benchmark's workload repositories work the same way (``WORKLOADS``): ``--workload-repository=NAME`` is
``NAME.url`` in ``[workloads]`` (OSB's ``benchmark.ini`` key), ``default`` is
opensearch-project/opensearch-benchmark-workloads, clones live in ``$BENCH_HOME/workloads/NAME``, a workload is a
folder holding ``workload.json``, and the branch is chosen as OSB chooses it (Rally's rule with ``main`` for
``master``).
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from bench.track import notices
from bench.track.source import TrackSource, public_url
from bench.track.versions import MASTER, best_match, variants
from bench.util import activity
from bench.util.errors import ConfigError, TrackError
from bench.util.file_lock import exclusive, lock_file_for
from bench.util.home import bench_home
from bench.util.ini import ini_path, ini_section

log = logging.getLogger(__name__)

DEFAULT_REPOSITORY = "default"
DEFAULT_URL = "https://github.com/elastic/rally-tracks"
TRACK_FILE = "track.json"
_GIT_TIMEOUT = 600.0


@dataclass(frozen=True)
class RepositoryKind:
    """Rally's track repositories or OSB's workload repositories: where each is configured, cloned and read."""

    section: str  # bench.ini section with NAME.url, and the folder below the bench home
    default_url: str
    spec_file: str
    main: str  # the branch for no version / a newer major
    noun: str
    flag: str  # --track-repository / --workload-repository
    revision_flag: str
    name_flag: str

    @property
    def path_flag(self) -> str:
        return f"{self.name_flag}-path"  # --track-path / --workload-path


TRACKS = RepositoryKind("tracks", DEFAULT_URL, TRACK_FILE, MASTER, "track", "--track-repository", "--track-revision",
                        "--track")
WORKLOADS = RepositoryKind("workloads", "https://github.com/opensearch-project/opensearch-benchmark-workloads",
                           "workload.json", "main", "workload", "--workload-repository", "--workload-revision",
                           "--workload")
KINDS = {k.section: k for k in (TRACKS, WORKLOADS)}


def repository_url(name: str, kind: RepositoryKind = TRACKS) -> str:
    """The URL of the named repository: ``[tracks] NAME.url`` (``[workloads]``) in bench.ini, else elastic/rally-
    tracks (opensearch-benchmark-workloads) for ``default``; any other name without a URL is one line naming the key
    to set."""
    url = ini_section(kind.section).get(f"{name}.url", "")
    if url:
        return url
    if name == DEFAULT_REPOSITORY:
        return kind.default_url
    raise ConfigError(f"{kind.flag}={name}: no URL for it: set '{name}.url = <git URL or path>' in [{kind.section}] "
                      f"of {ini_path()}")


def repository_dir(name: str, kind: RepositoryKind = TRACKS) -> Path:
    if not name or "/" in name or name in (".", ".."):
        raise ConfigError(f"{kind.flag}={name!r}: use a plain name (its URL is [{kind.section}] NAME.url in "
                          f"bench.ini)")
    return bench_home() / kind.section / name


def is_local(url: str) -> bool:
    """A ``file://`` URL or a folder of this machine: reachable without a network, so ``--offline`` may clone it."""
    return url.startswith("file://") or ("://" not in url and Path(url).is_dir())


def listed(names: list[str], limit: int = 8) -> str:
    """A few names in one phrase, ``a, b, c and 12 more``; ``none`` for none."""
    if not names:
        return "none"
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def branch_order(name: str) -> tuple[int, tuple[int, ...], str]:
    """Named branches (``master``, ``main``) first, then version branches newest first, as one looks for them."""
    parts = name.split(".")
    if all(p.isdigit() for p in parts):
        return 1, (*(-int(p) for p in parts), 1), name  # the 1: 8.15 and 8.2 before 8
    return 0, (), name


def _git(args: list[str], cwd: Path | None = None, what: str = "") -> str:
    """Run git; a failure is a TrackError with git's own last line (never a traceback)."""
    try:
        done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=_GIT_TIMEOUT,
                              env={**os.environ, "GIT_TERMINAL_PROMPT": "0"})
    except FileNotFoundError:
        raise ConfigError("track repositories need git, which is not installed (apt-get install git); or use "
                          "--track-path with a track folder") from None
    except subprocess.TimeoutExpired:
        raise TrackError(f"git {' '.join(args)} did not finish in {_GIT_TIMEOUT:.0f} s{what}") from None
    if done.returncode != 0:
        last = next((ln.strip() for ln in reversed(done.stderr.splitlines()) if ln.strip()), f"exit {done.returncode}")
        raise TrackError(f"git {args[0]} failed{what}: {last}")
    return done.stdout


class TrackRepository:
    """One cloned track repository, brought to the revision a race needs by ``open``."""

    def __init__(self, name: str, url: str, directory: Path, kind: RepositoryKind = TRACKS) -> None:
        self.name, self.url, self.dir, self.kind = name, url, directory, kind
        self.branch: str | None = None

    @classmethod
    def open(cls, name: str = DEFAULT_REPOSITORY, *, revision: str | None = None, version: str | None = None,
             offline: bool = False, progress: bool = True, kind: RepositoryKind = TRACKS) -> TrackRepository:
        """Clone (unless there), fetch (unless ``offline``; a failed fetch warns and keeps the local state, as
        Rally does), then check out ``revision`` or the branch that fits ``version``."""
        repo = cls(name, repository_url(name, kind), repository_dir(name, kind), kind)
        with exclusive(lock_file_for(repo.dir), waiting=f"waiting for another bench updating {repo.dir}"), \
                activity.step(f"{kind.noun.capitalize()} repository {name}", enabled=progress):
            repo._clone_or_fetch(offline)
            if revision:
                repo._checkout_revision(revision)
            else:
                repo._checkout_for(version, offline)
        return repo

    def _clone_or_fetch(self, offline: bool) -> None:
        if (self.dir / ".git").exists():
            if not offline:
                try:
                    _git(["fetch", "--prune", "--tags", "origin"], self.dir, f" in {self.dir}")
                except TrackError as e:
                    notices.warn(f"could not update {self.kind.noun} repository {self.name} from {self.url} ({e}); "
                                 f"continuing with the local copy in {self.dir} (--offline skips the update)")
            return
        if self.dir.exists() and any(self.dir.iterdir()):
            raise ConfigError(f"{self.dir} is not a git repository: move it away (bench clones {self.kind.noun} repository "
                              f"{self.name} there)")
        # A file:// URL or a folder needs no network: cloning it is no download, so --offline allows it.
        if offline and not is_local(self.url):
            raise ConfigError(f"{self.kind.noun} repository {self.name} is not cloned yet ({self.dir}) and --offline forbids "
                              f"cloning {self.url}: run once without --offline, or use {self.kind.path_flag}")
        part = self.dir.with_name(self.dir.name + ".part")
        shutil.rmtree(part, ignore_errors=True)
        part.parent.mkdir(parents=True, exist_ok=True)
        try:
            _git(["clone", "--quiet", self.url, str(part)],
                 what=f" for {self.kind.noun} repository {self.name} ({self.url})")
        except TrackError as e:
            raise TrackError(f"{e}; {self._remedies()}") from None
        if self.dir.exists():
            self.dir.rmdir()
        part.rename(self.dir)

    def _remedies(self) -> str:
        """What else works when the repository cannot be cloned: Rally's remedies, with bench's names."""
        k = self.kind
        return (f"use {k.path_flag}=DIR for a {k.noun} folder on this machine, point the repository at a reachable "
                f"copy with '{self.name}.url = <git URL, file:// URL or folder>' in [{k.section}] of {ini_path()}, "
                f"or clone it into {self.dir} yourself and pass --offline")

    def branches(self) -> list[str]:
        """Every branch of the clone, the remote's and local ones, in branch_order."""
        return sorted({*self._remote_branches(), *self._local_branches()}, key=branch_order)

    def _remote_branches(self) -> list[str]:
        out = _git(["for-each-ref", "--format=%(refname:strip=3)", "refs/remotes/origin"], self.dir)
        return [b for b in out.split() if b != "HEAD"]

    def _local_branches(self) -> list[str]:
        return _git(["for-each-ref", "--format=%(refname:strip=2)", "refs/heads"], self.dir).split()

    def _checkout_revision(self, revision: str) -> None:
        try:
            _git(["checkout", "--quiet", revision], self.dir, f" in {self.dir}")
        except TrackError:
            raise TrackError(f"{self.kind.revision_flag}={revision}: no such branch, tag or commit in {self.kind.noun} "
                             f"repository {self.name} ({self.url}); its branches: {listed(self.branches())}") from None
        self.branch = revision
        if revision in self._remote_branches() and revision in self._local_branches():
            self._fast_forward(revision)

    def _default_branch(self) -> str | None:
        """The remote's own default branch (origin/HEAD), e.g. ``main`` where there is no ``master``."""
        try:
            ref = _git(["symbolic-ref", "--short", "refs/remotes/origin/HEAD"], self.dir).strip()
        except TrackError:
            return None
        return ref.removeprefix("origin/") or None

    def _checkout_for(self, version: str | None, offline: bool) -> None:
        remote, local = self._remote_branches(), self._local_branches()
        main = self.kind.main
        branch = best_match(remote, version, main) or best_match(local, version, main)
        if branch == main and main not in remote + local:
            branch = self._default_branch()
        if branch is None or branch not in remote + local:
            tags = set(_git(["tag", "--list"], self.dir).split())
            tag = next((f"v{v}" for v in (variants(version) if version else []) if f"v{v}" in tags), None)
            if tag is None:
                known = listed(sorted(remote, key=branch_order))
                raise TrackError(f"{self.kind.noun} repository {self.name} ({self.url}) has no branch for version {version} "
                                 f"(branches: {known}): pass {self.kind.revision_flag}=BRANCH")
            _git(["checkout", "--quiet", tag], self.dir, f" in {self.dir}")
            self.branch = tag
            return
        _git(["checkout", "--quiet", branch], self.dir, f" in {self.dir}")
        self.branch = branch
        if not offline and branch in remote:
            self._fast_forward(branch)

    def _fast_forward(self, branch: str) -> None:
        try:
            _git(["merge", "--ff-only", "--quiet", f"origin/{branch}"], self.dir, f" in {self.dir}")
        except TrackError as e:
            notices.warn(f"{self.kind.noun} repository {self.name}: local commits or changes in {self.dir} keep branch {branch} "
                         f"from updating ({e}); using it as it is")

    @property
    def revision(self) -> str:
        return _git(["rev-parse", "HEAD"], self.dir).strip()

    @property
    def dirty(self) -> bool:
        return bool(_git(["status", "--porcelain"], self.dir).strip())

    def source(self) -> TrackSource:
        return TrackSource(kind="repository", repository=self.name, url=public_url(self.url), branch=self.branch,
                           revision=self.revision, dirty=self.dirty)

    def track_names(self) -> list[str]:
        """Every folder with a track.json, relative to the repository (``geonames``, ``elastic/logs``)."""
        out = []
        for root, dirs, files in os.walk(self.dir):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            if self.kind.spec_file in files:
                out.append(Path(root).relative_to(self.dir).as_posix())
        return sorted(out)

    def track_dir(self, name: str) -> Path:
        parts = Path(name).parts
        if not parts or Path(name).is_absolute() or ".." in parts:
            raise TrackError(f"--track={name}: not a track name; see 'bench list tracks'")
        d = self.dir / name
        if not (d / self.kind.spec_file).is_file():
            names = self.track_names()
            raise TrackError(f"unknown {self.kind.noun} '{name}' in {self.kind.noun} repository {self.name} ({self.url}, {self.branch}): "
                             f"it has {', '.join(names) if names else 'no tracks'}")
        return d


def path_source(track_dir: Path) -> TrackSource:
    """A --track-path track: its folder, and its commit when the folder is in a git working copy."""
    source = TrackSource(kind="path", path=str(track_dir))
    try:
        inside = subprocess.run(["git", "rev-parse", "HEAD"], cwd=track_dir, capture_output=True, text=True,
                                timeout=30)
        if inside.returncode == 0:
            source.revision = inside.stdout.strip()
            status = subprocess.run(["git", "status", "--porcelain", "--", "."], cwd=track_dir, capture_output=True,
                                    text=True, timeout=30)
            source.dirty = bool(status.stdout.strip())
    except (OSError, subprocess.TimeoutExpired):
        pass  # no git: the folder alone says where the track came from
    return source
