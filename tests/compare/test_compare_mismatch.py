"""compare() names up front what differs between the trials besides what is compared (pure)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from bench.compare import compare, render_comparison
from bench.compare.core import Side, TrialData
from bench.results.stats import ThroughputStats
from bench.results.summary import Summary, TaskSummary
from bench.trials.sqlite import TrialInfo

MACHINE = {"hostname": "driver-1", "cpu_count": 2, "memory_bytes": 24 * 2**30, "cpu_model": "EPYC"}
ES = [{"name": "default", "engine": "elasticsearch", "version": "8.19.21", "nodes": 1, "hosts": []}]


def _trial(i: int, **info: Any) -> TrialData:
    base: dict[str, Any] = {"id": f"{i:08x}" + "a" * 24, "track": "nginx", "challenge": "index-only", "status": "complete",
                            "start_time": datetime(2024, 1, 1, tzinfo=UTC), "car": ["defaults"],
                            "track_params": {"doc_count": 200000}, "clusters": ES, "machine": MACHINE,
                            "bench_version": "0.1.0"}
    tasks = [TaskSummary(task="index", operation_type="bulk", unit="docs", requests=10,
                         throughput=ThroughputStats(min=900, mean=1000, median=1000, max=1100, unit="docs/s"))]
    return TrialData(info=TrialInfo(**{**base, **info}), summary=Summary(tasks=tasks))


def _side(label: str, *trials: TrialData) -> Side:
    return Side(label=label, selector=label, trials=list(trials))


def test_identical_trials_give_no_mismatch_warning():
    cmp = compare(_side("a", _trial(1)), [_side("b", _trial(2))])
    assert not any(w.startswith("Trials differ") for w in cmp.warnings)


def test_every_mismatch_is_named_with_each_sides_value_and_listed_first():
    other_machine = {**MACHINE, "hostname": "driver-2", "cpu_count": 8}
    cand = _trial(2, test_mode=True, track_params={"doc_count": 1000, "bulk_size": 100}, car=["defaults", "4gheap"],
                  clusters=[{**ES[0], "version": "8.15.0"}], machine=other_machine, bench_version="0.2.0")
    errors = TaskSummary(task="index", operation_type="bulk", unit="docs", requests=10, failed_requests=2,
                         error_rate=0.2)
    cand.summary = Summary(tasks=[errors])
    cmp = compare(_side("base", _trial(1)), [_side("cand", cand)])
    assert cmp.warnings[:6] == [
        "Trials differ in test mode: base: full; cand: test mode.",
        "Trials differ in track params: base: bulk_size=unset, doc_count=200000; "
        "cand: bulk_size=100, doc_count=1000.",
        "Trials differ in engine versions: base: elasticsearch 8.19.21; cand: elasticsearch 8.15.0.",
        "Trials differ in cars: base: defaults; cand: defaults+4gheap.",
        "Trials differ in load-driver machines: base: driver-1 (2 CPUs, 24 GiB, EPYC); "
        "cand: driver-2 (8 CPUs, 24 GiB, EPYC).",
        "Trials differ in bench versions: base: 0.1.0; cand: 0.2.0.",
    ]
    assert cmp.warnings[6].startswith("cand: complete, with errors")  # then the errors, then the rest
    # Every rendering carries them (the table before its rows).
    for fmt in ("table", "markdown"):
        text = render_comparison(cmp, fmt)
        assert "Trials differ in test mode: base: full; cand: test mode." in text, fmt


def test_a_group_whose_own_trials_differ_names_the_odd_trials():
    odd = _trial(3, test_mode=True)
    cmp = compare(_side("base", _trial(1), _trial(2), odd), [_side("cand", _trial(4), _trial(5), _trial(6))])
    assert cmp.warnings[0] == (f"Trials differ in test mode: base: full ({'0' * 7}1 {'0' * 7}2), "
                               f"test mode ({'0' * 7}3); cand: full.")


def test_unknown_environment_is_not_a_difference():
    # A trial that stored no machine facts or clusters (an older or failed race) is unknown, not different.
    cmp = compare(_side("a", _trial(1)), [_side("b", _trial(2, machine={}, clusters=[]))])
    assert not any(w.startswith("Trials differ") for w in cmp.warnings)


def test_one_cluster_against_a_ccr_pair_of_the_same_version_is_no_engine_mismatch():
    pair = [{**ES[0], "name": "leader"}, {**ES[0], "name": "follower"}]
    cmp = compare(_side("a", _trial(1)), [_side("b", _trial(2, clusters=pair))])
    assert not any("engine versions" in w for w in cmp.warnings)


def _started(car: str, repository: str, flavour: str, modules: int, jdk: str, version: str) -> dict[str, Any]:
    return {**ES[0], "car": car, "distribution": {"engine": "elasticsearch", "version": "8.19.21",
                                                  "repository": repository, "flavour": flavour,
                                                  "modules": [f"m{i}" for i in range(modules)]},
            "java": {"source": jdk, "home": "/jdk", "version": version}}


def test_distributions_jdks_and_the_cars_clusters_really_ran_are_compared_per_cluster():
    base = _trial(1, car=["defaults"], clusters=[_started("defaults+512mheap", "release", "official", 98,
                                                          "bundled", "24.0.2")])
    cand = _trial(2, car=["defaults"], clusters=[_started("defaults+512mheap", "maven-integ-test", "minimal", 4,
                                                          "system", "17.0.15")])
    warnings = compare(_side("base", base), [_side("cand", cand)]).warnings
    assert "Trials differ in distributions: base: release (official, 98 modules); " \
           "cand: maven-integ-test (minimal, 4 modules)." in warnings
    assert "Trials differ in JDKs: base: bundled JDK 24.0.2; cand: system JDK 17.0.15." in warnings
    # Both clusters ran defaults+512mheap whatever --car said: no car difference is claimed.
    assert not any(w.startswith("Trials differ in cars") for w in warnings)
    # A trial of an existing cluster (no facts of what bench started) is unknown, not different.
    external = _trial(3, car=[], clusters=ES)
    assert not any("distributions" in w for w in compare(_side("a", base), [_side("b", external)]).warnings)


def test_different_track_sources_are_named_and_unknown_is_no_difference():
    repo = {"kind": "repository", "repository": "default", "url": "https://github.com/elastic/rally-tracks",
            "branch": "master", "revision": "cff4b31f89b3cb52f6c37f4f38920c8b3c39bb70"}
    cmp = compare(_side("base", _trial(1, track_source={"kind": "built-in"})),
                  [_side("cand", _trial(2, track_source=repo))])
    assert cmp.warnings[0] == ("Trials differ in track sources: base: bench built-in; cand: repository default "
                               "(https://github.com/elastic/rally-tracks) master at cff4b31f89b3.")
    moved = {**repo, "revision": "0123456789ab" + "0" * 28, "dirty": True}
    cmp = compare(_side("base", _trial(1, track_source=repo)), [_side("cand", _trial(2, track_source=moved))])
    assert "cand: repository default (https://github.com/elastic/rally-tracks) master at 0123456789ab with local " \
           "changes." in cmp.warnings[0]
    # A trial stored before bench recorded sources is unknown, not different.
    cmp = compare(_side("base", _trial(1)), [_side("cand", _trial(2, track_source=repo))])
    assert not any("track sources" in w for w in cmp.warnings)


def test_no_line_of_the_terminal_comparison_exceeds_its_width():
    import io

    from rich.console import Console

    from bench.compare import comparison_renderable

    other_machine = {**MACHINE, "hostname": "a-rather-long-driver-host-name.example.internal", "cpu_count": 8}
    cand = _trial(2, test_mode=True, track_params={"doc_count": 1000, "bulk_size": 100, "ingest_percentage": 50},
                  machine=other_machine, track_source={"kind": "path", "path": "/home/someone/rally-tracks/nginx"})
    cmp = compare(_side("baseline", _trial(1)), [_side("candidate", cand)])
    assert any(len(w) > 100 for w in cmp.warnings)  # what used to print as one 158-column line
    for width in (60, 100):
        console = Console(file=io.StringIO(), width=width, color_system=None, soft_wrap=True)
        console.print(comparison_renderable(cmp, width=width, full=True))
        lines = console.file.getvalue().splitlines()
        assert max(len(line.rstrip()) for line in lines) <= width, [ln for ln in lines if len(ln.rstrip()) > width]
        assert "Warning: Trials differ in load-driver machines" in "\n".join(lines)
