"""What a trial stores of a started cluster's distribution and JDK, and how show and reports say it (pure)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from bench.provision.facts_text import distribution_text
from bench.provision.java import jdk_version
from bench.provision.model import ClusterInfo, DistributionFacts, JavaFacts
from bench.reporting.context import environment_rows
from bench.trials.model import TrialInfo


def _info() -> ClusterInfo:
    dist = DistributionFacts(engine="elasticsearch", version="8.19.21", repository="release", flavour="official",
                             url="https://artifacts.elastic.co/x.tar.gz", archive="elasticsearch-8.19.21-linux-x86_64.tar.gz",
                             checksum="sha512:" + "ab" * 64, modules=[f"m{i}" for i in range(90)], bundled_jdk=True)
    return ClusterInfo(name="leader", engine="elasticsearch", version="8.19.21", car=["defaults", "512mheap"], nodes=[],
                       distribution=dist, java=JavaFacts(source="bundled", home="/x/jdk", version="24.0.2",
                                                         found_by="bundled"))


def test_cluster_facts_carry_car_distribution_and_jdk_never_credentials():
    info = _info()
    info.username = "bench"
    facts = info.facts()
    assert facts["car"] == "defaults+512mheap" and facts["java"]["major"] == 24
    assert facts["distribution"]["checksum"].startswith("sha512:ab") and "password" not in str(facts)
    assert JavaFacts(source="system", home="/j", version="1.8.0_392").major == 8


def test_distribution_text_and_environment_rows():
    facts = {"name": "leader", "engine": "elasticsearch", "version": "8.19.21", "nodes": 1, **_info().facts()}
    text = distribution_text(facts)
    assert text == ("release elasticsearch-8.19.21-linux-x86_64.tar.gz (sha512 abababababab…), 90 modules, "
                    "bundled JDK 24.0.2")
    minimal = {**facts, "distribution": {**facts["distribution"], "repository": "maven-integ-test",
                                         "flavour": "minimal", "modules": ["apm", "x-pack-core"],
                                         "fallback": "artifacts.elastic.co unreachable (Name or service not known)"},
               "java": {"source": "system", "home": "/usr/lib/jvm/j17", "version": "17.0.15"}}
    assert distribution_text(minimal).endswith(
        "2 modules (apm, x-pack-core), system JDK 17.0.15 (/usr/lib/jvm/j17); fell back from release: "
        "artifacts.elastic.co unreachable (Name or service not known)")
    assert distribution_text({"name": "x"}) is None  # a cluster bench did not start
    trial = TrialInfo(id="a" * 32, track="nginx", challenge="c", start_time=datetime(2026, 1, 1, tzinfo=UTC),
                      clusters=[facts], car=["defaults", "512mheap"])
    rows = dict(environment_rows(trial))
    assert rows["Cluster leader"] == "elasticsearch 8.19.21, 1 node(s), car defaults+512mheap"
    assert rows["Distribution leader"] == text


def test_jdk_version_reads_the_release_file(tmp_path: Path):
    (tmp_path / "release").write_text('IMPLEMENTOR="Debian"\nJAVA_VERSION="17.0.15"\n')
    assert jdk_version(tmp_path) == "17.0.15" and jdk_version(tmp_path / "none") is None
