"""Each ``bench race`` option is declared once (bench/race/flags.py), and everything made from the declarations
agrees with them: the parser, the namespace-to-options mapping, the options a topology makes moot, the remote
race's command line and option groups, and the docs' options table."""

from __future__ import annotations

import argparse
import json
import shlex
from pathlib import Path
from typing import Any

import pytest

from bench.cli import build_parser
from bench.race.flags import (
    RACE_OPTIONS,
    REPORT_FLAGS,
    applying_options,
    moot_when,
    options_table,
    race_fields,
    remote_args,
    remote_groups,
)
from bench.race.options import RaceOptions

FIELDS = set(RaceOptions.model_fields)


def _race_parser() -> argparse.ArgumentParser:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices["race"]


def _fields(*args: str, track: bool = True) -> dict[str, Any]:
    return race_fields(build_parser().parse_args(["race", *(["--track=nginx"] if track else []), *args]))


def test_every_field_is_declared_exactly_once_and_every_declaration_is_a_field() -> None:
    declared = [o.field for o in RACE_OPTIONS]
    assert sorted(declared) == sorted(set(declared)), "a field declared twice"
    assert set(declared) == FIELDS, FIELDS.symmetric_difference(declared)


def test_the_remote_groups_cover_every_field_once_and_moot_means_the_topology_decides() -> None:
    groups = remote_groups()
    assert sum(len(g) for g in groups.values()) == len(FIELDS) and set().union(*groups.values()) == FIELDS
    for o in RACE_OPTIONS:
        assert (o.remote == "moot") == ("topology" in o.moot_with), o.field
        assert bool(o.refused) == (o.remote == "refused"), o.field
        assert set(o.moot_with) <= FIELDS, o.field


def test_every_declared_flag_is_the_race_parsers_and_nothing_else_is() -> None:
    parser = _race_parser()
    # the metrics store flags are every storing command's (bench/cli/common.py)
    parsed = {s for a in parser._actions for s in a.option_strings} - {"-h", "--help", "--metrics-store",
                                                                        "--metrics-store-options"}
    declared = {n for o in RACE_OPTIONS for f in o.flags for n in f.names} | {n for f in REPORT_FLAGS for n in f.names}
    refused = {n for n in parsed if parser._option_string_actions[n].dest.startswith("rally_")}
    assert parsed - refused == declared


# A value for each flag, and what the field becomes from it.
SAMPLES: dict[str, tuple[str, Any]] = {
    "track": ("--track=geonames", "geonames"), "track_path": ("--workload-path=/w", Path("/w")),
    "track_repository": ("--track-repository=fork", "fork"), "track_revision": ("--track-revision=v1", "v1"),
    "repository_kind": ("--workload-repository=osb", "workloads"), "include_tasks": ("--include-tasks=a,b", ["a", "b"]),
    "exclude_tasks": ("--exclude-tasks=c", ["c"]), "race_id": ("--test-run-id=abcdef0123", "abcdef0123"),
    "pipeline": ("--pipeline=from-distribution", "from-distribution"),
    "track_params": ("--workload-params=bulk_size:10", {"bulk_size": 10}),
    "ignore_unused_track_params": ("--ignore-unused-track-params", True),
    "randomization": ("--randomization-enabled --randomization-n=7", None),
    "challenge": ("--test-procedure=append", "append"), "car": ("--car=defaults,4gheap", ["defaults", "4gheap"]),
    "car_params": ("--car-params=heap:1g", {"heap": "1g"}), "distribution_version": ("--distribution-version=8.0.0",
                                                                                    "8.0.0"),
    "distribution": ("--distribution=opensearch:2.19.1", "opensearch:2.19.1"), "plugins": ("--plugin=/p.zip",
                                                                                            ["/p.zip"]),
    "elasticsearch_plugins": ("--elasticsearch-plugins=analysis-icu", ["analysis-icu"]),
    "opensearch_plugins": ("--opensearch-plugins=analysis-icu", ["analysis-icu"]),
    "distribution_repository": ("--distribution-repository=maven-integ-test", "maven-integ-test"),
    "runtime_jdk": ("--runtime-jdk=17", "17"), "distribution_path": ("--distribution-path=/es.zip", Path("/es.zip")),
    "nodes": ("--nodes=3", 3), "http_port": ("--http-port=9500", 9500),
    "target_hosts": ("--target-hosts=h:9200", "h:9200"), "client_options": ("--client-options=timeout:60",
                                                                            {"timeout": 60}),
    "test_mode": ("--test-mode", True), "offline": ("--offline", True), "corpus_dir": ("--corpus-dir=/c", Path("/c")),
    "generate_corpora": ("--generate-corpora", 1), "on_error": ("--on-error=abort", "abort"),
    "max_error_rate": ("--max-error-rate=1%", 0.01), "user_tags": ("--user-tags=a:b", {"a": "b"}),
    "report_format": ("--report-format=json", "json"), "report_file": ("--report-file=/r.md", Path("/r.md")),
    "show_in_report": ("--show-in-report=all", "all"), "keep_cluster": ("--preserve-install", True),
    "worker_processes": ("--worker-processes=3", 3), "load_driver": ("--load-driver=x:y", "x:y"),
    "load_driver_hosts": ("--load-driver-hosts=127.0.0.1", ["127.0.0.1"]), "topology": ("--topology=t.yml",
                                                                                         Path("t.yml")),
    "yes": ("--yes", True), "max_instances": ("--max-instances=3", 3), "progress": ("--quiet", False),
    "live_html": ("--live-html=/tmp/live.html", Path("/tmp/live.html")),
    "telemetry": ("--telemetry=host", ["host"]), "telemetry_params": ("--telemetry-params=a:1", {"a": 1}),
    "telemetry_profile": ("--telemetry-profile=ccr", "ccr"), "pinning": ("--pinning=auto", "auto"),
    "driver_cpus": ("--driver-cpus=1", "1"),
    "enable_driver_profiling": ("--enable-driver-profiling", True), "redline": ("--redline=task:x,p99:1s",
                                                                                "task:x,p99:1s"),
    "thresholds": ("--threshold=q:p99_latency<1s,abort-on-fail", ["q:p99_latency<1s,abort-on-fail"]),
}


@pytest.mark.parametrize("field", sorted(FIELDS))
def test_each_fields_flag_sets_that_field_and_no_other(field: str) -> None:
    flag, expected = SAMPLES[field]
    track = field not in ("track", "track_path", "repository_kind")  # these name the track themselves
    base = _fields(track=track)
    given = _fields(*shlex.split(flag), track=track)
    changed = {k for k in FIELDS if given.get(k) != base.get(k)}
    # OSB's --workload-repository is the track repository of the workloads kind
    extra = {"repository_kind": {"track_repository"}}.get(field, set())
    assert changed - extra == {field}, changed
    if field == "randomization":
        assert given[field].n == 7
    else:
        assert RaceOptions(**{**given, "pipeline": None, "target_hosts": given.get("target_hosts"),
                              "topology": given.get("topology")}).model_dump()[field] == \
            RaceOptions.model_validate({field: expected}).model_dump()[field]


def test_the_defaults_come_from_the_options_model() -> None:
    assert RaceOptions(**_fields()) == RaceOptions(track="nginx")


# A value other than the default for each option a remote race is given.
GIVEN: dict[str, Any] = {
    "track": "geonames", "track_repository": "fork", "track_revision": "abc123", "include_tasks": ["index"],
    "exclude_tasks": ["tag:slow"], "ignore_unused_track_params": True, "challenge": "append", "test_mode": True,
    "offline": True, "generate_corpora": 7, "on_error": "abort", "user_tags": {"study": "x"}, "worker_processes": 3,
    "repository_kind": "workloads", "thresholds": ["q:p(95)<500,abort-on-fail,delay-abort-eval=2s"],
    "driver_cpus": "2-3",
}


@pytest.mark.parametrize("field", sorted(remote_groups()["given"]))
def test_the_remote_command_line_gives_each_option_its_value(field: str, tmp_path: Path) -> None:
    """Round trip: the options, as the remote race's command line, parsed back are the same options."""
    opts = RaceOptions(track="nginx")
    files: dict[str, str] = {}
    if field == "track_path":
        opts = RaceOptions(track_path=tmp_path)
        files = {"track_path": str(tmp_path)}
    elif field in ("track_params", "client_options"):
        value = {"bulk_size": 10, "nested": {"a": [1, 2]}}
        opts = RaceOptions(track="nginx", **{field: value})
        (tmp_path / "v.json").write_text(json.dumps(value))
        files = {field: str(tmp_path / "v.json")}
    else:
        opts = RaceOptions(**{"track": "nginx", field: GIVEN[field]})
    args = remote_args(opts, files)
    back = RaceOptions(**race_fields(build_parser().parse_args(["race", *args])))
    assert getattr(back, field) == getattr(opts, field), args
    assert getattr(opts, field) != getattr(RaceOptions(), field)


def test_a_value_that_travels_as_a_file_needs_the_callers_file() -> None:
    with pytest.raises(ValueError, match="--track-params"):
        remote_args(RaceOptions(track="nginx", track_params={"a": 1}))


def test_moot_options_are_left_out_of_what_is_stored() -> None:
    assert moot_when("topology") == remote_groups()["moot"]
    stored = applying_options({"target_hosts": "h:9200", "car": ["defaults"], "track": "nginx"})
    assert "car" not in stored and stored["track"] == "nginx"


def test_the_docs_table_has_a_row_per_declared_option_with_its_flags() -> None:
    table = options_table(_race_parser())
    rows = [line for line in table.splitlines()[2:]]
    assert len(rows) == len(RACE_OPTIONS) + sum(1 for f in REPORT_FLAGS if not f.hidden)
    for o in RACE_OPTIONS:
        row = next(r for r in rows if f"`{o.flags[0].names[0]}`" in r)
        assert all(f"`{n}`" in row for f in o.flags if not f.hidden for n in f.names)
    assert "| `--on-error` | `continue` |" in table and "continue-on-network" in table
