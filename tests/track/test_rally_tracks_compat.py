"""benchmarks/rally_tracks_compat.py on a small rally-tracks-shaped checkout: each track is loaded as a race
would load it (no cluster, no corpus files), and the table says which load and why the others do not."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from tests.support.checkout import ROOT

GOOD = {
    "version": 2,
    "indices": [{"name": "logs", "body": "index.json"}],
    # The corpus file is not there: a load-only check must not need it.
    "corpora": [{"name": "logs", "base-url": "https://example.invalid/logs",
                 "documents": [{"source-file": "documents.json.bz2", "document-count": 1000}]}],
    "operations": [{"name": "index-append", "operation-type": "bulk", "bulk-size": 500}],
    "challenges": [
        {"name": "index-only", "default": True,
         "schedule": [{"operation": "index-append", "clients": 2}, {"operation": "refresh"}]},
    ],
}


def _unsupported(name: str, op_type: str) -> dict:
    """A track whose only task uses an operation type no engine knows (stays unsupported whatever bench adds)."""
    return {
        "version": 2,
        "operations": [{"name": name, "operation-type": op_type}],
        "challenges": [{"name": "default", "default": True, "schedule": [{"operation": name}]}],
    }


@pytest.fixture(scope="module")
def compat():
    path = ROOT / "benchmarks" / "rally_tracks_compat.py"
    spec = importlib.util.spec_from_file_location("rally_tracks_compat", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop(spec.name, None)


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    def track(rel: str, spec: dict, **files: str) -> None:
        d = tmp_path / rel
        d.mkdir(parents=True)
        (d / "track.json").write_text(json.dumps(spec))
        for name, text in files.items():
            (d / name).write_text(text)

    track("logs", GOOD, **{"index.json": '{"settings": {"index.number_of_shards": 1}}'})
    track("stats", _unsupported("stats-probe", "no-such-operation"))
    track("elastic/pipelines", _unsupported("create-pipeline", "another-missing-operation"))
    track("geo", _unsupported("stats-probe", "no-such-operation"))
    track("broken", {"version": 2, "challenges": [{"name": "c", "schedule": "not a list"}]})
    # Not tracks: hidden and private folders are skipped even with a track.json inside.
    track(".ci/sample", GOOD)
    track("_tools/sample", GOOD)
    return tmp_path


def test_every_track_folder_is_found_and_helper_folders_are_not(compat, checkout):
    found = [str(p.relative_to(checkout)) for p in compat.track_dirs(checkout)]
    assert found == ["broken", "elastic/pipelines", "geo", "logs", "stats"]


def test_loads_as_a_race_would_and_names_the_reason(compat, checkout):
    good = compat.run_isolated(checkout / "logs")
    assert good == {"loads": True, "challenge": "index-only", "reason": ""}
    bad = compat.run_isolated(checkout / "stats")
    assert bad["loads"] is False
    assert bad["challenge"] == "default"
    assert "unsupported operation-type 'no-such-operation'" in bad["reason"]
    assert "Traceback" not in bad["reason"]


def test_table_counts_and_groups_failures_by_construct(compat, checkout, capsys):
    assert compat.main([str(checkout)]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0] == "| track | default challenge | loads | reason |"
    rows = {line.split(" | ")[0].lstrip("| "): line for line in lines[2:] if line.startswith("| ")}
    assert set(rows) == {"broken", "elastic/pipelines", "geo", "logs", "stats"}
    assert "| logs | index-only | yes |" in rows["logs"]
    assert "| no |" in rows["broken"]
    # Reasons are shown relative to the track folder and without bench's list of alternatives.
    assert str(checkout) not in rows["stats"] and "use one of" not in rows["stats"]
    assert "**1 of 5 tracks load with their default challenge.**" in out
    assert "- operation-type 'no-such-operation' not supported: 2 tracks (geo, stats)" in out
    assert "- operation-type 'another-missing-operation' not supported: 1 track (elastic/pipelines)" in out


def test_not_a_checkout_is_one_clear_line(compat, tmp_path, capsys):
    assert compat.main([str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no track.json below it" in err[0]


def test_operation_types_a_track_py_registers_are_told_apart(compat, tmp_path):
    (tmp_path / "track.py").write_text(
        "def register(registry):\n    registry.register_runner('knn-recall', object(), async_runner=True)\n")
    registered = "track.json: operation 'r' has unsupported operation-type 'knn-recall'"
    builtin = "track.json: operation 'n' has unsupported operation-type 'node-stats'"
    assert compat.failure_kind(registered, str(tmp_path)) == "operation type the track registers in its track.py"
    assert compat.failure_kind(builtin, str(tmp_path)) == "built-in Rally operation type missing"
    rows = [{"track": "t", "path": str(tmp_path), "challenge": "c", "loads": False, "reason": registered}]
    assert "operation-type 'knn-recall' not supported (the track's track.py registers it): 1 track (t)" \
        in compat.markdown(rows)


def test_track_py_failures_are_grouped_by_what_the_code_needs(compat):
    esrally = ("track.py:4: loading track.py failed: ModuleNotFoundError: No module named 'esrally.mechanic': the "
               "track uses a module of Rally's own package that bench does not provide")
    faker = "track.py:4: loading track.py failed: ModuleNotFoundError: No module named 'faker': install it"
    assert compat.reason_group(esrally) == "track.py imports a part of Rally's package (esrally) bench lacks"
    assert compat.reason_group(faker) == "track.py needs Python module 'faker'"
    assert compat.failure_kind(faker, "/nonexistent") == "the track's Python code (track.py imports, dependencies)"
