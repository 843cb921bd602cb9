"""The commands that read a track without racing it: ``bench info``, ``bench render-track``, and ``bench list
tracks|workloads``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from rich.console import Console

from bench.cli.common import params, track_repository_flags
from bench.race.flags import osb_flags
from bench.util import redact
from bench.util.errors import BenchError, ConfigError


def add_parsers(sub: Any) -> list[argparse.ArgumentParser]:
    inf = sub.add_parser("info", help="what a track holds: corpora, challenges, schedules, and what bench cannot run")
    inf.add_argument("--track", help="a track name: bench's built-in ones, else one in the track repository")
    inf.add_argument("--track-path", "--workload-path", dest="track_path",
                     help="a folder containing track.json (or an OSB workload.json)")
    track_repository_flags(inf)
    inf.add_argument("--distribution-version", help="the version whose branch of the track repository to use "
                                                    "(default: the repository's default branch)")
    inf.add_argument("--track-params", "--workload-params", dest="track_params", help="k:v,k2:v2 or a JSON file")
    inf.add_argument("--challenge", "--test-procedure", dest="challenge",
                     help="show only this challenge's (test procedure's) schedule")
    inf.add_argument("--offline", action="store_true",
                     help="never install the track's dependencies (a missing one is an error naming the pip command)")

    rt = sub.add_parser("render-track", help="print a track's rendered JSON (Rally's render-track)")
    rt.add_argument("--track", help="a track name: bench's built-in ones, else one in the track repository")
    rt.add_argument("--track-path", "--workload-path", dest="track_path",
                    help="a folder containing track.json (or an OSB workload.json)")
    track_repository_flags(rt)
    rt.add_argument("--track-params", "--workload-params", dest="track_params", help="k:v,k2:v2 or a JSON file")
    rt.add_argument("--distribution-version", help="the version whose branch of the track repository to use")
    rt.add_argument("--offline", action="store_true", help="do not update the track repository")
    rt.add_argument("--output-path", help="write the JSON to this file instead of stdout")
    return [inf, rt]


def run_info(a: argparse.Namespace, console: Console) -> int:
    """Exit 0 whenever the track can be read, runnable or not: each task bench cannot run says so and why."""
    from bench.track.info import render_info
    from bench.track.loader import load_track

    osb_flags(a)
    if not a.track and not a.track_path:
        raise ConfigError("bench info needs --track=NAME (see 'bench list tracks'), --track-path=DIR, --workload=NAME "
                          "or --workload-path=DIR")
    resolved = _resolve(a)
    track = load_track(resolved.dir, params(a.track_params, "--track-params"), ignore_unused=True,
                       offline=a.offline)
    console.print(render_info(track, a.challenge, resolved.source), highlight=False, markup=False, soft_wrap=True)
    return 0


def _resolve(a: argparse.Namespace) -> Any:
    """The track --track/--track-path/--track-repository name, for commands without a cluster: a repository's
    branch follows --distribution-version when given, else it is the repository's default branch."""
    from bench.track.repository import TRACKS, WORKLOADS
    from bench.track.resolve import resolve_track

    kind = WORKLOADS if osb_flags(a) == "workloads" else TRACKS
    return resolve_track(a.track, a.track_path, repository=a.track_repository, revision=a.track_revision,
                         version=lambda: a.distribution_version, offline=a.offline, progress=not a.quiet, kind=kind)


def list_tracks(a: argparse.Namespace, console: Console) -> None:
    """bench's built-in tracks, then the track repository's (the default one unless --track-repository names
    another). The default repository out of reach is a note (the built-in tracks are still listed); a named one
    is an error."""
    from tabulate import tabulate

    from bench.track.loader import list_tracks
    from bench.track.repository import DEFAULT_REPOSITORY, TrackRepository
    from bench.track.resolve import repository_listing

    headers = ["Name", "Description", "Challenges", "Default"]
    if not a.track_repository and not a.track_revision:
        rows = [(t.name, t.description, ", ".join(t.challenges), t.default_challenge) for t in list_tracks()]
        console.print("bench's built-in tracks (generated data):\n" + tabulate(rows, headers=headers), markup=False,
                      highlight=False)
    name = a.track_repository or DEFAULT_REPOSITORY
    try:
        repo = TrackRepository.open(name, revision=a.track_revision, version=a.distribution_version,
                                    offline=a.offline, progress=not a.quiet)
    except BenchError as e:
        if a.track_repository or a.track_revision:
            raise
        console.print(f"\nnote: track repository {name}: {redact.redact_text(str(e))}", markup=False,
                      highlight=False)
        return
    rows = [(t.name, t.description, ", ".join(t.challenges), t.default_challenge) for t in repository_listing(repo)]
    source = repo.source()
    console.print(f"\nTrack repository {name} ({source.url}, {source.branch} at {(source.revision or '?')[:12]}); "
                  f"a name shared with a built-in track needs --track-repository={name}:\n"
                  + tabulate(rows, headers=headers), markup=False, highlight=False)


def list_workloads(a: argparse.Namespace, console: Console) -> None:
    """OSB's 'list workloads': the workload repository's workloads (default: opensearch-benchmark-workloads)."""
    from tabulate import tabulate

    from bench.track.repository import DEFAULT_REPOSITORY, WORKLOADS, TrackRepository
    from bench.track.resolve import repository_listing

    osb_flags(a)
    name = a.track_repository or DEFAULT_REPOSITORY
    repo = TrackRepository.open(name, revision=a.track_revision, version=a.distribution_version, offline=a.offline,
                                progress=not a.quiet, kind=WORKLOADS)
    rows = [(t.name, t.description, ", ".join(t.challenges), t.default_challenge) for t in repository_listing(repo)]
    source = repo.source()
    console.print(f"Workload repository {name} ({source.url}, {source.branch} at {(source.revision or '?')[:12]}):\n"
                  + tabulate(rows, headers=["Name", "Description", "Test procedures", "Default"]), markup=False,
                  highlight=False)


def run_render_track(a: argparse.Namespace, console: Console) -> int:
    """Rally's render-track: the track.json as rendered with the track parameters, as indented JSON."""
    from bench.track.loader import render_track_json

    osb_flags(a)
    if not a.track and not a.track_path:
        raise ConfigError("bench render-track needs --track=NAME, --track-path=DIR, --workload=NAME or "
                          "--workload-path=DIR")
    resolved = _resolve(a)
    text = render_track_json(resolved.dir, params(a.track_params, "--track-params"))
    if a.output_path:
        try:
            Path(a.output_path).expanduser().write_text(text + "\n", encoding="utf-8")
        except OSError as e:
            raise ConfigError(f"--output-path {a.output_path}: cannot write: {e.strerror}") from None
        console.print(f"Rendered track {a.track or resolved.dir.name} written to {a.output_path}.", markup=False,
                      highlight=False)
    else:
        sys.stdout.write(text + "\n")
    return 0
