"""Which engines and versions still create indices with ``index.soft_deletes.enabled: false``.

Both engines made soft deletes mandatory for new indices: Elasticsearch from 8.0.0 and OpenSearch from 2.0.0
refuse to create such an index ("Creating indices with soft-deletes disabled is no longer supported"), so a
soft-deletes-off variant there would run at 100 % errors. Before that they accept it (deprecated since
Elasticsearch 7.6 and throughout OpenSearch 1.x); Elasticsearch before 6.5 has no soft deletes at all, so off
is simply what it does. Verified live against OpenSearch 2.19.1 and Elasticsearch 8.19.21
(tests/ccr/test_ccr_live.py); the other boundaries follow the engines' own version checks.
"""

from __future__ import annotations

import re

REFUSED_FROM = {"elasticsearch": (8, 0, 0), "opensearch": (2, 0, 0)}


def version_tuple(version: str) -> tuple[int, int, int]:
    """``8.19.21`` / ``2.19.1-SNAPSHOT`` -> (8, 19, 21); missing parts count as 0."""
    m = re.match(r"^\s*(\d+)(?:\.(\d+))?(?:\.(\d+))?", version)
    if not m:
        raise ValueError(f"version {version!r} is not MAJOR[.MINOR[.PATCH]]")
    major, minor, patch = (int(x) if x else 0 for x in m.groups())
    return major, minor, patch


def soft_deletes_off_supported(engine: str, version: str) -> bool:
    """True if ``engine`` at ``version`` creates indices with ``index.soft_deletes.enabled: false``."""
    if engine not in REFUSED_FROM:
        raise ValueError(f"engine {engine!r} is not one of {', '.join(sorted(REFUSED_FROM))}")
    return version_tuple(version) < REFUSED_FROM[engine]


def soft_deletes_off_problem(engine: str, version: str) -> str | None:
    """Why soft deletes cannot be turned off on this engine/version (one sentence), None when they can."""
    if soft_deletes_off_supported(engine, version):
        return None
    name = "Elasticsearch" if engine == "elasticsearch" else "OpenSearch"
    since = ".".join(str(p) for p in REFUSED_FROM[engine])
    return (f"{name} {version} refuses to create indices with index.soft_deletes.enabled: false (soft deletes are "
            f"mandatory since {name} {since})")
