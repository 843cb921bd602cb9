"""How each ``bench race`` option reaches a cloud topology's race, which runs on a driver host as a second
``bench race``: given to that race (``race_args``), applied by this machine's bench (the machines, the clusters'
boot, the report, the exit code), moot with a topology, or refused in one line before any machine exists.

Each option declares which, once, in ``bench/race/flags.py``; a field without a declaration fails the tests, so an
option added later cannot be dropped on the way to the driver host without a word: a dropped ``--client-options``
timeout or track repository would measure something else under the same name."""

from __future__ import annotations

import re

from bench.race.flags import refused_remotely, remote_groups
from bench.race.options import RaceOptions
from bench.track.repository import KINDS, repository_url
from bench.track.resolve import uses_repository
from bench.util.errors import ConfigError

# Each option declares how it reaches a remote race (bench/race/flags.py); these are its groups.
_GROUPS = remote_groups()
SENT = _GROUPS["given"]  # given to the driver host's race by bench/cloud/race.py's race_args
HERE = _GROUPS["here"]  # applied here: the trial's id, the clusters and machines, the report and exit code
MOOT = _GROUPS["moot"]  # a topology names each cluster's engine, version, car and nodes itself
REFUSED = _GROUPS["refused"]  # not available on a driver host: one line before any machine exists


def refuse_unsent(opts: RaceOptions, topology: str) -> None:
    """One line for every option given that a cloud race cannot take (its default is fine)."""
    given = refused_remotely(opts)
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
