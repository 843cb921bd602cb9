"""OpenSearch Benchmark workloads as bench reads them: test procedures, clients_list, a zero target-throughput,
OSB's branch choice, a workload repository and OSB's flags (against a local git repository of real workloads)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from bench.cli import main
from bench.track.loader import load_track
from bench.track.osb_workload import as_track, task_name_for_clients
from bench.track.versions import best_match
from bench.util.errors import TrackError
from tests.support.shared_tree import shared_path
from tests.support.track_repo import git

OSB_TREE = shared_path("tracks-real", "osb-workloads")  # the tests that read it request real_track_trees
F = Path("workload.json")


def test_test_procedures_become_challenges_and_clients_list_expands():
    raw = {"test_procedures": [{"name": "p", "default": True, "schedule": [
        {"operation": "term", "clients_list": [1, 4], "target-throughput": 0},
        {"parallel": {"target-throughput": 0, "tasks": [{"operation": "x", "target-interval": 0}]}},
        {"operation": "y", "target-throughput": 5}]}]}
    out = as_track(raw, F)
    sched = out["challenges"][0]["schedule"]
    assert [(t["name"], t["clients"]) for t in sched[:2]] == [("term_1_clients", 1), ("term_4_clients", 4)]
    assert "target-throughput" not in sched[0]  # 0 is unthrottled in OSB
    assert sched[2]["parallel"] == {"tasks": [{"operation": "x"}]}
    assert sched[3]["target-throughput"] == 5
    assert task_name_for_clients("match-all", 8) == "match-all-8-clients"
    with pytest.raises(TrackError, match="keep only one"):
        as_track({"test_procedures": [], "schedule": []}, F)
    with pytest.raises(TrackError, match="clients_list must be"):
        as_track({"schedule": [{"operation": "a", "clients_list": []}]}, F)


def test_osb_branch_choice_uses_main():
    assert best_match(["main", "1", "2"], None, "main") == "main"
    assert best_match(["main", "1", "2"], "2.19.1", "main") == "2"
    assert best_match(["main", "1", "2"], "3.6.0", "main") == "main"


def test_a_real_workload_loads_with_osb_words(tmp_path, real_track_trees):
    t = load_track(OSB_TREE / "nyc_taxis", {}, ignore_unused=True, offline=True)
    assert t.format == "osb" and t.find_challenge(None).name == "append-no-conflicts"
    with pytest.raises(TrackError, match="unknown test procedure 'nope' in workload 'nyc_taxis'"):
        t.find_challenge("nope")
    with pytest.raises(TrackError, match="workload 'nyc_taxis' does not use the workload parameter"):
        load_track(OSB_TREE / "nyc_taxis", {"nope": 1}, offline=True)


def test_workload_repository_and_osb_flags(tmp_path, monkeypatch, capsys, real_track_trees):
    origin = tmp_path / "origin"
    origin.mkdir()
    for name in ("nyc_taxis", "pmc", "common_operations"):  # workloads include files of common_operations
        shutil.copytree(OSB_TREE / name, origin / name)
    git(origin, "init", "--quiet", "--initial-branch=main")
    git(origin, "add", "-A")
    git(origin, "commit", "--quiet", "-m", "workloads")
    home = tmp_path / "home"
    home.mkdir()
    (home / "bench.ini").write_text(f"[workloads]\ndefault.url = file://{origin}\n")
    monkeypatch.setenv("BENCH_HOME", str(home))
    assert main(["--quiet", "info", "--workload", "pmc", "--test-procedure", "append-no-conflicts"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Workload: pmc") and "Test procedures:" in out
    assert (home / "workloads" / "default" / "pmc" / "workload.json").is_file()
    assert main(["--quiet", "list", "workloads"]) == 0
    out = capsys.readouterr().out
    assert "nyc_taxis" in out and "pmc" in out and "main at" in out
    assert main(["--quiet", "info", "--workload", "pmc", "--track-repository", "x"]) != 0
    assert "exclude each other" in capsys.readouterr().err
    assert main(["--quiet", "info", "--workload", "nope"]) != 0
    assert "unknown workload 'nope' in workload repository default" in capsys.readouterr().err
