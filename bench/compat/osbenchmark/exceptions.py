"""``osbenchmark.exceptions``: OSB's exception classes, which workload code raises and catches."""

from __future__ import annotations

from typing import Any


class BenchmarkError(Exception):
    """Base of OSB's errors: a message and an optional cause."""

    def __init__(self, message: Any, cause: BaseException | None = None) -> None:
        super().__init__(message, cause)
        self.message = message
        self.cause = cause

    def __repr__(self) -> str:
        return str(self.message)

    def __str__(self) -> str:
        return str(self.message)


class LaunchError(BenchmarkError):
    pass


class InstallError(BenchmarkError):
    pass


class ExecutorError(BenchmarkError):
    pass


class SystemSetupError(BenchmarkError):
    pass


class BenchmarkAssertionError(BenchmarkError):
    pass


class BenchmarkTaskAssertionError(BenchmarkAssertionError):
    pass


class ConfigError(BenchmarkError):
    pass


class DataError(BenchmarkError):
    pass


class SupplyError(BenchmarkError):
    pass


class BuildError(BenchmarkError):
    pass


class InvalidSyntax(BenchmarkError):
    pass


class InvalidName(BenchmarkError):
    pass


class WorkloadConfigError(BenchmarkError):
    pass


class NotFound(BenchmarkError):
    pass


class InvalidExtensionException(BenchmarkError):
    pass


class ConfigurationError(BenchmarkError):
    pass


class DataStreamingError(BenchmarkError):
    pass


class MappingsError(BenchmarkError):
    pass
