"""Errors the user can act on.

Every BenchError is printed by the CLI as one line (no traceback) and ends the process with its
exit code. Anything else escaping is a bug in bench and is shown with a traceback.
"""

from __future__ import annotations


class BenchError(Exception):
    """A problem with input, environment or cluster that the user can fix."""

    exit_code = 1


class ConfigError(BenchError):
    """Bad command-line option, car config, telemetry profile or other configuration."""

    exit_code = 2


class TrackError(BenchError):
    """A track cannot be loaded: syntax, validation, unknown operation, missing corpus."""

    exit_code = 2


class ProvisionError(BenchError):
    """A distribution cannot be obtained or a node cannot be started."""


class ClusterError(BenchError):
    """A cluster cannot be reached, rejects our credentials or certificates, or misbehaves."""


class RaceError(BenchError):
    """The race failed while running (e.g. --on-error=abort, a node died)."""


class RaceInterrupted(BenchError):
    """The user pressed Ctrl-C or the process got SIGTERM."""

    exit_code = 130


class StoreError(BenchError):
    """The trial store cannot be read or written, or a trial id is unknown."""
