"""What the test environment must not see: the site-packages of the base interpreter behind its venv.
A fresh machine's base has only pip and an old setuptools, so anything the tests get from there passes
on one machine and fails on the next."""

from __future__ import annotations

import sys
import sysconfig
from pathlib import Path


def base_site_packages() -> set[str]:
    """The base interpreter's own site-packages folders (what --system-site-packages would expose), resolved."""
    return {str(Path(sysconfig.get_path(kind, vars={"base": sys.base_prefix, "platbase": sys.base_prefix}))
                .resolve()) for kind in ("purelib", "platlib")}


def leaked(paths: list[str]) -> set[str]:
    """Which of ``paths`` (a sys.path) are the base interpreter's site-packages."""
    return base_site_packages() & {str(Path(p).resolve()) for p in paths if p}
