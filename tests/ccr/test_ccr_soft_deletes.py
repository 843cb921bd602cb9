"""Which engine/version accepts index.soft_deletes.enabled=false (the live check against OpenSearch 2.19.1 and
Elasticsearch 8.19.21 is in tests/ccr/test_ccr_live.py)."""

from __future__ import annotations

import pytest

from bench.provision.soft_deletes import soft_deletes_off_problem, soft_deletes_off_supported


@pytest.mark.parametrize("engine,version,supported", [
    ("elasticsearch", "7.17.25", True), ("elasticsearch", "7.10.2", True), ("elasticsearch", "8.0.0", False),
    ("elasticsearch", "8.19.21", False), ("elasticsearch", "9.1.0", False),
    ("opensearch", "1.3.20", True), ("opensearch", "2.0.0", False), ("opensearch", "2.19.1", False),
    ("opensearch", "3.6.0", False), ("opensearch", "2.19.1-SNAPSHOT", False), ("elasticsearch", "7", True),
])
def test_soft_deletes_off_by_engine_and_version(engine: str, version: str, supported: bool) -> None:
    assert soft_deletes_off_supported(engine, version) is supported
    problem = soft_deletes_off_problem(engine, version)
    assert (problem is None) is supported
    if problem:
        assert version in problem and "mandatory since" in problem


def test_unknown_engine_or_version_is_refused() -> None:
    with pytest.raises(ValueError, match="engine 'solr'"):
        soft_deletes_off_supported("solr", "9.0.0")
    with pytest.raises(ValueError, match="version 'latest'"):
        soft_deletes_off_supported("opensearch", "latest")
