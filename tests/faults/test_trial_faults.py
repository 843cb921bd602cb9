"""Faults from a careful user's trial (2026-11-26): each must end in one clear line naming what is wrong and
what to do, a non-zero exit and no traceback; nothing measured is lost and no failure reads as a measurement."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(300)

# Runs bench's CLI in a Python where `import ray` fails, whether or not the ray extra is installed here.
WITHOUT_RAY = "import sys; sys.modules['ray'] = None; from bench.cli import main; sys.exit(main(sys.argv[1:]))"


def bench_without_ray(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", WITHOUT_RAY, *args], cwd=tmp_path, env=dict(os.environ),
                          capture_output=True, text=True, timeout=120)


def assert_one_line(err: str, *needles: str) -> str:
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, f"expected one line on stderr, got: {err!r}"
    for n in needles:
        assert n in lines[0], f"{n!r} not in {lines[0]!r}"
    return lines[0]


@pytest.mark.parametrize("flag", ["--load-driver=ray:auto", "--ray-address=127.0.0.1:6379",
                                  "--load-driver-hosts=10.0.0.1"])
def test_ray_driver_without_the_ray_extra_is_one_line(flag: str, tmp_path: Path) -> None:
    # A closed port as target: the Ray check must come first, before any cluster is contacted or started.
    proc = bench_without_ray(tmp_path, "race", "--quiet", "--track=geopoint", "--test-mode",
                             "--target-hosts=127.0.0.1:1", flag)
    assert proc.returncode != 0
    line = assert_one_line(proc.stderr, flag.split("=")[0], "pip install 'bench[ray]'")
    assert "not installed" in line


def test_loadgen_ray_driver_without_the_ray_extra_is_one_line(tmp_path: Path) -> None:
    config = tmp_path / "loadgen.yml"
    config.write_text("requests:\n  - request:\n      method: GET\n      url: http://127.0.0.1:1/\n")
    proc = bench_without_ray(tmp_path, "loadgen", "--quiet", f"--config={config}", "--load-driver=ray:auto")
    assert proc.returncode != 0
    assert_one_line(proc.stderr, "--load-driver=ray:auto", "pip install 'bench[ray]'")


def test_png_export_without_kaleido_is_one_line(tmp_path: Path) -> None:
    code = ("import sys; sys.modules['kaleido'] = None\n"
            "import plotly.graph_objects as go\n"
            "from bench.util.errors import ConfigError\n"
            "from bench.reporting.plots import Plot, export_pngs\n"
            "try:\n"
            f"    export_pngs([Plot(key='p', title='p', figure=go.Figure())], {str(tmp_path / 'pngs')!r})\n"
            "except ConfigError as e:\n"
            "    print(e)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert_one_line(proc.stdout, "--plots-dir", "kaleido", "pip install 'bench[plots]'")


def test_a_too_short_client_timeout_says_so(es_target: str, capsys: pytest.CaptureFixture[str]) -> None:
    from bench.cli import main

    rc = main(["race", "--quiet", "--track=geopoint", "--test-mode", f"--target-hosts={es_target}",
               "--client-options=timeout:0.001"])
    err = capsys.readouterr().err
    assert rc != 0
    line = assert_one_line(err, "0.001 s", "timeout:0.001 in --client-options is too short")
    assert "cannot reach" not in line


def _health_track(folder: Path, iterations: int) -> Path:
    import json

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "track.json").write_text(json.dumps({
        "version": 2,
        "operations": [{"name": "health", "operation-type": "cluster-health",
                        "request-params": {"wait_for_status": "yellow"}}],
        "schedule": [{"operation": "health", "clients": 2, "iterations": iterations}]}))
    return folder


def _corrupt_one_samples_page(db: Path) -> None:
    """Overwrite one leaf page of the samples table's b-tree with garbage (after a checkpoint, so the page is
    in the file itself)."""
    import sqlite3

    conn = sqlite3.connect(db)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    pages = [r[0] for r in conn.execute("SELECT pageno FROM dbstat WHERE name = 'samples' AND pagetype = 'leaf' "
                                        "ORDER BY pageno")]
    conn.close()
    assert len(pages) > 4, pages
    page = pages[len(pages) // 2]
    with open(db, "r+b") as f:
        f.seek((page - 1) * page_size)
        f.write(b"\xff" * 64)
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] != "ok"
    except sqlite3.DatabaseError as e:
        assert "malformed" in str(e)
    finally:
        conn.close()


def test_a_damaged_samples_page_is_one_line_in_every_command_that_reads_it(
        es_target: str, tmp_path: Path, bench_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from bench.cli import main
    from bench.trials.sqlite import TrialStore
    from bench.util.home import db_path

    track = _health_track(tmp_path / "health", 3000)
    for _ in range(2):
        assert main(["race", "--quiet", f"--track-path={track}", f"--target-hosts={es_target}"]) == 0
    capsys.readouterr()
    with TrialStore() as store:
        ids = [t.id for t in store.list_trials()]
    db = db_path()
    _corrupt_one_samples_page(db)

    def one_line_for(*args: str) -> str:
        rc = main(list(args))
        out, err = capsys.readouterr()
        assert rc != 0, (args, out, err)
        line = assert_one_line(err, str(db), "database disk image is malformed", ".recover")
        assert "sqlite3.DatabaseError" in line
        return out

    # Whichever trial the damaged page holds samples of: show, compare and both reports refuse it in one line.
    damaged = []
    for trial_id in ids:
        rc = main(["show", trial_id])
        out, err = capsys.readouterr()
        if rc != 0:
            assert_one_line(err, str(db), "database disk image is malformed")
            damaged.append(trial_id)
    assert damaged, "no trial's samples were on the damaged page"
    trial_id = damaged[0]
    one_line_for("show", trial_id)
    one_line_for("compare", "--baseline", ids[0], "--candidate", ids[1])
    for fmt in ("html", "markdown"):
        one_line_for("report", trial_id, f"--format={fmt}", f"--output={tmp_path / ('r.' + fmt)}")
    # A new race into the damaged store says so too, before it measures anything.
    one_line_for("race", "--quiet", f"--track-path={track}", f"--target-hosts={es_target}")


@pytest.mark.parametrize("base_url, offline", [(None, False), ("http://127.0.0.1:1/corpora", True)])
def test_a_truncated_corpus_that_cannot_be_downloaded_again_is_never_to_be_deleted(
        base_url: str | None, offline: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import bz2
    import json
    import random

    from bench.cli import main

    rnd = random.Random(7)
    docs = b"".join(json.dumps({"n": i, "text": "%032x" % rnd.getrandbits(128)}).encode() + b"\n"
                    for i in range(20_000))
    folder = tmp_path / "track"
    folder.mkdir()
    corpus: dict[str, object] = {"name": "docs", "documents": [{"source-file": "documents.json.bz2",
                                                                "document-count": 20_000}]}
    if base_url:
        corpus["base-url"] = base_url
    (folder / "track.json").write_text(json.dumps({
        "indices": [{"name": "docs"}], "corpora": [corpus],
        "schedule": [{"operation": {"operation-type": "bulk", "bulk-size": 100}}]}))
    packed = bz2.compress(docs)
    only_copy = folder / "documents.json.bz2"
    only_copy.write_bytes(packed[: len(packed) // 2])  # truncated, e.g. by an interrupted copy

    rc = main(["race", "--quiet", f"--track-path={folder}", "--target-hosts=127.0.0.1:1",
               *(["--offline"] if offline else [])])
    err = capsys.readouterr().err
    assert rc != 0
    line = assert_one_line(err, str(only_copy), "damaged", "good copy")
    assert "delete" not in line
    assert ("--offline" if offline else "no base-url") in line
    assert only_copy.stat().st_size == len(packed) // 2  # still there, untouched


def test_mapping_conflicts_are_grouped_by_kind_not_by_document_id(
        es_target: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from bench.cli import main
    from bench.trials.sqlite import TrialStore

    folder = tmp_path / "conflict"
    folder.mkdir()
    lines = []
    for i in range(200):  # 100 strings for a long, 100 bad dates: two kinds, 200 distinct messages
        doc = {"n": f"not-a-number-{i}"} if i % 2 else {"n": i, "d": f"no-date-{i}"}
        lines += [json.dumps({"index": {"_index": "conflict", "_id": f"doc-{i}"}}), json.dumps(doc)]
    (folder / "documents.json").write_text("\n".join(lines) + "\n")
    (folder / "track.json").write_text(json.dumps({
        "indices": [{"name": "conflict", "body": "index.json"}],
        "corpora": [{"name": "conflict", "documents": [{"source-file": "documents.json", "document-count": 200,
                                                        "includes-action-and-meta-data": True}]}],
        "schedule": [{"operation": {"operation-type": "delete-index"}},
                     {"operation": {"operation-type": "create-index"}},
                     {"operation": {"name": "bulk", "operation-type": "bulk", "bulk-size": 1}, "clients": 2}]}))
    (folder / "index.json").write_text(json.dumps({"settings": {"index.number_of_replicas": 0},
                                                   "mappings": {"properties": {"n": {"type": "long"},
                                                                               "d": {"type": "date"}}}}))
    # every document conflicts, so every bulk fails: not measured (exit 4); the point is how errors are grouped
    assert main(["race", "--quiet", f"--track-path={folder}", f"--target-hosts={es_target}"]) == 4
    out = capsys.readouterr().out
    with TrialStore() as store:
        trial = store.list_trials()[0]
        summary = store.summary(trial.id)
    assert summary is not None
    task = next(t for t in summary.tasks if t.task == "bulk")
    assert task.failed_requests == 200
    kinds = task.error_messages
    assert len(kinds) == 2, [k.message for k in kinds]
    assert sorted(k.count for k in kinds) == [100, 100]
    assert all(k.variants == 100 for k in kinds)
    fields = sorted("[n] of type [long]" in k.message or "[d] of type [date]" in k.message for k in kinds)
    assert fields == [True, True], [k.message for k in kinds]
    assert "more distinct messages" not in out and "more kinds" not in out
