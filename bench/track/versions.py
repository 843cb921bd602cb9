"""Which branch of a track repository fits a cluster's version, as Rally chooses it (``esrally.utils.versions``).

Branches named after versions (``7``, ``7.10``, ``8.15``) are tried from the most specific variant of the version
to the least: ``8.15.2`` tries ``8.15.2``, then ``8.15`` (or else the nearest earlier minor of major 8), then ``8``;
a version newer than every major a branch names takes ``master``, as does no version at all. Pure functions.
"""

from __future__ import annotations

import re

_STRICT = re.compile(r"^(\d+)\.(\d+)\.(\d+)(?:-(.+))?$")
_LOOSE = re.compile(r"^(\d+)(?:\.(\d+)?(?:\.(\d+)?(?:-(.+))?)?)?$")
MASTER = "master"


def _parts(text: str, strict: bool) -> tuple[int, int | None, int | None, str | None] | None:
    m = (_STRICT if strict else _LOOSE).match(text)
    if m is None:
        return None
    major, minor, patch, suffix = m.groups()
    return int(major), int(minor) if minor else None, int(patch) if patch else None, suffix


def variants(version: str) -> list[str]:
    """``8.15.2-SNAPSHOT`` → ``8.15.2-SNAPSHOT, 8.15.2, 8.15, 8``: most specific first (empty if not a version)."""
    parts = _parts(version, strict=True)
    if parts is None:
        return []
    major, minor, patch, suffix = parts
    out = [f"{major}.{minor}.{patch}-{suffix}"] if suffix else []
    return out + [f"{major}.{minor}.{patch}", f"{major}.{minor}", f"{major}"]


def _nearest_earlier_minor(branches: list[str], major: int, minor: int) -> str | None:
    minors = []
    for b in branches:
        p = _parts(b, strict=False)
        if p is not None and p[0] == major and p[1] is not None and p[2] is None and p[3] is None and p[1] <= minor:
            minors.append(p[1])
    return f"{major}.{max(minors)}" if minors else None


def best_match(branches: list[str], version: str | None, main: str = MASTER) -> str | None:
    """The branch of ``branches`` for ``version`` (None: no version, i.e. ``main``: Rally's ``master``, OSB's
    ``main``), or None when none fits. OSB chooses as Rally does, with ``main`` for ``master``."""
    if not version:
        return main
    parts = _parts(version, strict=True)
    if parts is None:
        return None
    major, minor, _, _ = parts
    for candidate in variants(version):
        if candidate in branches:
            return candidate
        if candidate == f"{major}.{minor}":
            earlier = _nearest_earlier_minor(branches, major, minor or 0)
            if earlier is not None:
                return earlier
    majors = [p[0] for b in branches if (p := _parts(b, strict=False)) is not None]
    if major > max(majors, default=-1):
        return main
    return None
