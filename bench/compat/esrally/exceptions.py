"""Rally's exception hierarchy (``esrally.exceptions``): track code raises and catches these by name."""

from __future__ import annotations

from typing import Any

MSG_NO_CONNECTION = "You may need to specify --offline if running without Internet connection."


class RallyError(Exception):
    """Base of every Rally error; ``message`` and an optional ``cause`` as in Rally."""

    def __init__(self, message: Any, cause: BaseException | None = None) -> None:
        super().__init__(message, cause)
        self.message = message
        self.cause = cause

    def full_message(self) -> str:
        msg = str(self.message)
        nesting = 0
        current: BaseException | None = self.cause
        while current is not None:
            nesting += 1
            msg += f"\n{'  ' * nesting}{current}"
            current = getattr(current, "cause", None)
        return msg

    def __str__(self) -> str:
        return str(self.message)


class LaunchError(RallyError):
    """A cluster could not be launched."""


class SystemSetupError(RallyError):
    """The system is not set up as needed (a missing tool, a wrong path)."""


class RallyAssertionError(RallyError):
    """An assertion about the benchmark's state failed."""


class RallyTaskAssertionError(RallyAssertionError):
    """A task's assertion on a response failed."""


class ConfigError(RallyError):
    pass


class DataError(RallyError):
    """Data that a track or parameter source provides is invalid."""


class SupplyError(RallyError):
    pass


class BuildError(RallyError):
    pass


class InvalidSyntax(RallyError):
    pass


class InvalidName(RallyError):
    pass


class TrackConfigError(RallyError):
    """The track's configuration is invalid."""


class NotFound(RallyError):
    pass


class UserInterrupted(RallyError):
    pass
