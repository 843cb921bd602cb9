"""The shared folder beside the checkout (``../shared``, or ``$BENCH_SHARED``): the real rally-tracks and OSB
workload trees, the recorded fixtures, the replication plugin. Found relative to the checkout, never at a machine
path. A test that needs a part of it that is missing fails in CI (``CI`` set: a clone without it is a broken CI
machine) and skips elsewhere, saying where it looked."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.checkout import ROOT

SHARED_ENV = "BENCH_SHARED"


def shared_root() -> Path:
    return Path(os.environ.get(SHARED_ENV) or ROOT.parent / "shared").resolve()


def shared_path(*parts: str) -> Path:
    """A path in the shared folder, whether or not it is there."""
    return shared_root().joinpath(*parts)


def need_shared(*parts: str) -> Path:
    """A path in the shared folder that must be there: fails the test in CI, skips it elsewhere."""
    path = shared_path(*parts)
    if path.exists():
        return path
    line = (f"{path} is not there: the tests need ../shared beside the checkout (or ${SHARED_ENV} naming it), as "
            f"CI lays it")
    if os.environ.get("CI"):
        pytest.fail(line, pytrace=False)
    pytest.skip(line)
