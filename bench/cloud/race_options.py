"""How each ``bench race`` option reaches a cloud topology's race, which runs on a driver host as a second
``bench race``: given to that race (``race_args``), applied by this machine's bench (the machines, the clusters'
boot, the report, the exit code), moot with a topology, or refused in one line before any machine exists.

Every option of ``RaceOptions`` is in exactly one of these (tests/test_cloud_race_options.py checks it), so an
option added later cannot be dropped on the way to the driver host without a word: a dropped ``--client-options``
timeout or track repository would measure something else under the same name."""

from __future__ import annotations

import re

from bench.race.options import RaceOptions, moot_when
from bench.track.repository import KINDS, repository_url
from bench.track.resolve import uses_repository
from bench.util.errors import ConfigError

# Given to the driver host's race by bench/cloud/race.py's race_args (the repository's URL in its bench.ini).
SENT = frozenset({
    "track", "track_path", "track_repository", "track_revision", "repository_kind", "include_tasks", "exclude_tasks",
    "track_params", "ignore_unused_track_params", "challenge", "client_options", "test_mode", "offline",
    "generate_corpora", "on_error", "user_tags", "worker_processes",
})
# Applied here: the trial's id, the topology's clusters and how they boot (bench/cloud/source.py), the machines,
# the report and exit code of the trial brought back; the flags checked against a topology elsewhere.
HERE = frozenset({
    "race_id", "pipeline", "distribution", "plugins", "elasticsearch_plugins", "opensearch_plugins",
    "distribution_repository", "runtime_jdk", "max_error_rate", "report_format", "report_file", "show_in_report",
    "topology", "yes", "max_instances", "progress", "telemetry", "telemetry_params", "telemetry_profile", "pinning",
    "target_hosts", "load_driver", "load_driver_hosts",
})
# A topology names each cluster's engine, version, car and nodes itself.
MOOT = moot_when("topology")
# Not available on a driver host: what to do instead.
_ELSEWHERE = "drop it, or race a local topology or --target-hosts"
REFUSED: dict[str, tuple[str, str]] = {
    "redline": ("--redline", _ELSEWHERE),
    "randomization": ("--randomization-enabled", _ELSEWHERE),
    "enable_driver_profiling": ("--enable-driver-profiling", _ELSEWHERE),
    "corpus_dir": ("--corpus-dir", "it is a folder of this machine; drop it (the driver host downloads or generates "
                                   "the corpora)"),
    "distribution_path": ("--distribution-path", "it is a build on this machine; drop it and name the version in "
                                                 "the topology"),
    "keep_cluster": ("--keep-cluster", "its machines are deleted after the race; drop it, or race a local topology "
                                       "to keep the clusters"),
}


def refuse_unsent(opts: RaceOptions, topology: str) -> None:
    """One line for every option given that a cloud race cannot take (its default is fine)."""
    defaults = RaceOptions()
    given = [why for field, why in REFUSED.items() if getattr(opts, field) != getattr(defaults, field)]
    if given:
        raise ConfigError(f"{', '.join(flag for flag, _ in given)}: not available for a cloud topology's race "
                          f"(topology {topology}): {given[0][1]}")


def _reachable(url: str) -> bool:
    """Whether another machine can clone ``url``: a network URL (https://, ssh://, git@host:path), not a folder."""
    return (("://" in url and not url.startswith("file:")) or re.match(r"^[\w.-]+@[\w.-]+:", url) is not None)


def driver_ini(opts: RaceOptions) -> str | None:
    """The driver host's bench.ini, naming the track repository's URL as this machine's bench.ini does, when the
    track comes from a repository; a repository only this machine can reach is one line."""
    kind = KINDS[opts.repository_kind]
    if not uses_repository(opts.track, opts.track_path, opts.track_repository, opts.track_revision, kind):
        return None
    name = opts.track_repository or "default"
    url = repository_url(name, kind)
    if not _reachable(url):
        raise ConfigError(f"{kind.flag}={name}: its URL {url} is on this machine, which a cloud driver host cannot "
                          f"clone: set [{kind.section}] {name}.url to a git URL the driver host reaches, or give "
                          f"the {kind.noun} with --track-path")
    return f"[{kind.section}]\n{name}.url = {url}\n"
