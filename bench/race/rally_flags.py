"""esrally's ``race`` flags that bench does not take as they are: each is accepted by the parser and answered in
one line naming what bench does instead, so a copied Rally command line never fails with argparse's usage text.

(The Rally flags bench does take -- ``--pipeline``, ``--track-repository``, ``--include-tasks``, ``--race-id``,
``--user-tags``, ``--show-in-report``, ``--preserve-install``, ``--on-error``, ``--enable-driver-profiling`` ... -- are ordinary flags in
``bench.cli``.)
"""

from __future__ import annotations

import argparse

from bench.util.errors import ConfigError

_SOURCES = ("bench does not build Elasticsearch from sources (Rally's from-sources pipeline): race a release with "
            "--distribution-version, or your build's archive with --distribution-path")
_TEAMS = ("bench's cars are built in ('bench list cars'; mixins as --car=defaults,4gheap; variables with "
          "--car-params) and there are no team repositories")

# flag -> the one line bench answers it with (the flag takes a value unless listed in _SWITCHES)
REFUSED: dict[str, str] = {
    "--revision": _SOURCES,
    "--source-build-method": _SOURCES,
    "--team-path": _TEAMS,
    "--team-repository": _TEAMS,
    "--team-revision": _TEAMS,
    "--cluster-name": "bench names the clusters it starts itself; name clusters in a --topology file",
    "--kill-running-processes": "bench's nodes stop with the bench that started them; stop nodes a --keep-cluster "
                                "race left running with 'bench stop TRIAL'",
    "--effective-start-date": "bench records the real start of every trial; tag trials with --user-tag instead",
    "--skip-rest-api-check": "bench checks the cluster once with GET _nodes before the race, and needs that answer",
    "--configuration-name": "bench reads one settings file, $BENCH_HOME/bench.ini: set BENCH_HOME for another",
}
_SWITCHES = {"--kill-running-processes", "--skip-rest-api-check"}


def add_refused_flags(p: argparse.ArgumentParser) -> None:
    for flag in REFUSED:
        kw: dict[str, object] = {"action": "store_true"} if flag in _SWITCHES else {"metavar": "X"}
        p.add_argument(flag, dest=_dest(flag), default=None, help=argparse.SUPPRESS, **kw)  # type: ignore[arg-type]


def refuse_rally_flags(a: argparse.Namespace) -> None:
    for flag, why in REFUSED.items():
        if getattr(a, _dest(flag), None):
            raise ConfigError(f"{flag} (Rally's) is not supported: {why}")


def _dest(flag: str) -> str:
    return "rally_" + flag.lstrip("-").replace("-", "_")
