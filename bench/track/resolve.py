"""Which folder ``--track``/``--track-path``/``--track-repository`` name, and where it came from.

bench's built-in tracks (generated data, no download) and a track repository share the ``--track`` namespace:
a built-in name (``nginx``, ``http_logs``, ...) means the built-in track unless ``--track-repository`` or
``--track-revision`` is given; every other name is looked up in the track repository (``default``: elastic/rally-
tracks). So ``--track=geonames`` is rally-tracks' geonames, and ``--track=http_logs --track-repository=default``
is rally-tracks' http_logs rather than bench's generated one.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from bench.track import notices
from bench.track.loader import TrackListing, builtin_track_names, find_track, load_track
from bench.track.repository import DEFAULT_REPOSITORY, TRACKS, WORKLOADS, RepositoryKind, TrackRepository, path_source
from bench.track.source import TrackSource
from bench.util.errors import BenchError, ConfigError


class ResolvedTrack(NamedTuple):
    dir: Path
    source: TrackSource


def uses_repository(name: str | None, path: str | Path | None, repository: str | None,
                    revision: str | None, kind: RepositoryKind = TRACKS) -> bool:
    """Whether these flags name a track in a track repository (not a built-in one, not a folder). A workload name
    (--workload) always does: bench's built-in tracks are not OSB workloads."""
    if path is not None:
        return False
    if kind is WORKLOADS:
        return name is not None
    return bool(repository or revision) or (name is not None and name not in builtin_track_names())


def resolve_track(name: str | None, path: str | Path | None, *, repository: str | None = None,
                  revision: str | None = None, version: Callable[[], str | None] = lambda: None,
                  offline: bool = False, progress: bool = True, kind: RepositoryKind = TRACKS) -> ResolvedTrack:
    """The track's folder and source. ``version`` is asked only when a repository's branch must be chosen (no
    ``revision``): the cluster's version, or None for the repository's default branch."""
    if path is not None:
        if repository or revision:
            flag = "--track-repository" if repository else "--track-revision"
            raise ConfigError(f"{flag} and --track-path exclude each other: --track-path is a folder, "
                              f"{flag} names a track repository (as in Rally)")
        folder = find_track(None, path)
        return ResolvedTrack(folder, path_source(folder))
    if not uses_repository(name, path, repository, revision, kind):
        return ResolvedTrack(find_track(name, None), TrackSource(kind="built-in"))
    if not name:
        listing = f"bench list {kind.section}"
        raise ConfigError(f"{kind.flag}/{kind.revision_flag} need {kind.name_flag}=NAME (see '{listing}')")
    try:
        repo = TrackRepository.open(repository or DEFAULT_REPOSITORY, revision=revision,
                                    version=None if revision else version(), offline=offline, progress=progress,
                                    kind=kind)
    except BenchError as e:
        if repository or revision or kind is WORKLOADS:
            raise
        # Only the name pointed here: say it is not built in before why the repository could not help.
        raise type(e)(f"track '{name}' is not built in ({', '.join(builtin_track_names())}) and the track "
                      f"repository could not be read: {e}") from None
    return ResolvedTrack(repo.track_dir(name), repo.source())


def repository_listing(repo: TrackRepository) -> list[TrackListing]:
    """The repository's tracks with their descriptions and challenges, as ``bench list tracks`` shows them. A track
    that does not load here (e.g. its dependencies are not installed) is listed with why, in one phrase."""
    out = []
    for name in repo.track_names():
        try:
            with notices.silenced():
                t = load_track(repo.dir / name, {}, ignore_unused=True, offline=True)
        except BenchError as e:
            out.append(TrackListing(name=name, description=f"(does not load: {str(e)[:120]})", challenges=[],
                                    default_challenge=None))
            continue
        default = next((c.name for c in t.challenges if c.default), None)
        out.append(TrackListing(name=name, description=t.description, challenges=[c.name for c in t.challenges],
                                default_challenge=default))
    return out
