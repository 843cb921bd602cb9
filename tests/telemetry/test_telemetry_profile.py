"""The profile device and the JVM devices on real nodes: flame graphs per node and task from JFR execution samples,
kept with the trial and in HTML reports; jfr, gc and jit files of nodes bench started; a heap dump at the end."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from bench.cli import main
from bench.telemetry.flamegraph import parse_collapsed
from bench.telemetry.profile import ProfileSection
from bench.trials.sqlite import TrialStore
from bench.util.home import trials_dir
from benchmarks.nullsink import free_port, start_in_background
from tests.race.test_race import write_track


def _profiled_track(root: Path) -> Path:
    """Work the node is busy with for seconds, so 10 ms sampling gets samples of every window on a loaded machine
    (test mode's nginx indexed for ~70 ms, and one CI run's recording had no sample in it): 20,000 documents in
    bulks of 50 by two clients, then two clients searching for 2 s, into an index of the test's own."""
    data = root / "docs.json"
    root.mkdir(parents=True, exist_ok=True)
    data.write_text("".join(json.dumps({"n": i, "message": f"GET /item/{i} HTTP/1.1", "status": 200 + i % 5}) + "\n"
                            for i in range(20_000)))
    index = f"profiled-{root.parent.name.lower()}"
    return write_track(root / "t", [
        {"operation": {"name": "delete-index", "operation-type": "delete-index"}},
        {"operation": {"name": "create-index", "operation-type": "create-index"}},
        {"operation": {"name": "index-append", "operation-type": "bulk", "bulk-size": 50, "corpora": "c"},
         "clients": 2},
        {"operation": {"name": "search", "operation-type": "search", "index": index,
                       "body": {"query": {"match": {"message": "item"}}}}, "clients": 2, "time-period": 2}],
        indices=[{"name": index}],
        corpora=[{"name": "c", "documents": [{"source-file": str(data), "document-count": 20_000,
                                              "target-index": index}]}])


def _profile(trial_id: str) -> ProfileSection:
    with TrialStore() as store:
        summary = store.summary(trial_id)
    assert summary is not None
    return ProfileSection.model_validate(summary.sections["profile"])


def _profiled_race(es_target: str, tmp_path: Path, params: str) -> tuple[str, set[str], ProfileSection]:
    """The profiled track raced on the session node with the profile device: trial id, its tasks, its section."""
    rc = main(["--quiet", "race", f"--track-path={_profiled_track(tmp_path)}", f"--target-hosts={es_target}",
               "--telemetry=profile", f"--telemetry-params={params}"])
    assert rc == 0
    with TrialStore() as store:
        [trial] = store.list_trials()
        tasks = set(store.samples(trial.id)["task"])
    return trial.id, tasks, _profile(trial.id)


@pytest.mark.timeout(400)
def test_profile_of_an_existing_local_node_gives_flame_graphs_per_task(es_target: str, tmp_path: Path) -> None:
    trial_id, tasks, section = _profiled_race(es_target, tmp_path, "profile-interval:10")
    windows = {g.task for g in section.graphs}
    assert windows == tasks | {"all"}, (windows, tasks)
    whole = next(g for g in section.graphs if g.task == "all")
    # how many samples a few seconds of load give depends on the machine; some it must give, and the search too
    assert whole.cluster == "default" and whole.samples > 0, whole
    folder = trials_dir() / trial_id
    stacks = parse_collapsed((folder / whole.collapsed).read_text())
    assert sum(stacks.values()) == whole.samples
    frames = {f for s in stacks for f in s.split(";")}
    # real Java frames by name: the engine's own classes, and thread pools as roots
    assert any(f.startswith("org.elasticsearch.") for f in frames)
    assert any(re.fullmatch(r"\[[a-z_]+\]", s.split(";")[0]) for s in stacks)
    assert not any(re.fullmatch(r"0x[0-9a-f]+", f) for f in frames)  # names, never addresses
    page = (folder / whole.html).read_text()
    assert page.startswith("<!doctype html>") and "http" not in page.split("<body>")[1].split("xmlns")[0]
    assert (folder / "profiles" / "default").is_dir() and list((folder / "profiles").rglob("recording.jfr"))
    bulk = [g for g in section.graphs if g.task == "index-append"]
    assert bulk and bulk[0].samples > 0 and bulk[0].samples <= whole.samples
    assert next(g for g in section.graphs if g.task == "search").samples > 0
    # the HTML report carries the flame graphs
    out = Path(trials_dir()) / "report.html"
    assert main(["--quiet", "report", trial_id, "--format", "html", "--output", str(out)]) == 0
    text = out.read_text()
    assert text.count('class="fg"') == len(section.graphs) and "org.elasticsearch." in text


def test_profile_refuses_a_race_whose_nodes_are_elsewhere(capsys: pytest.CaptureFixture[str]) -> None:
    # The null sink answers _nodes without a local JVM behind it: nothing to attach to, said in one line, and the
    # trial is stored failed before any request is sent.
    port = free_port()
    procs = start_in_background(port)
    try:
        rc = main(["--quiet", "race", "--track=nginx", "--test-mode", f"--target-hosts=127.0.0.1:{port}",
                   "--telemetry=profile"])
    finally:
        for p in procs:
            p.terminate()
            p.join(10)
    assert rc != 0
    err = capsys.readouterr().err
    assert "telemetry device profile: no node of cluster(s) default runs on this machine" in err
    with TrialStore() as store:
        [trial] = store.list_trials()
        assert trial.status == "failed" and store.samples(trial.id).empty


@pytest.mark.usefixtures("local_engines")
@pytest.mark.timeout(600)
def test_jvm_devices_leave_their_files_with_the_trial() -> None:
    rc = main(["--quiet", "race", "--track=nginx", "--test-mode", "--challenge=index-only", "--car=defaults,512mheap",
               "--telemetry=jfr,gc,jit,heapdump", "--telemetry-params=gc-log-config:gc*=info"])
    assert rc == 0
    with TrialStore() as store:
        [trial] = store.list_trials()
    logs = trials_dir() / trial.id / "logs" / "default" / "default-0"
    assert (logs / "profile.jfr").stat().st_size > 100_000  # dumped when the node stopped
    gc = (logs / "gc.log").read_text()
    assert "Using G1" in gc or "Using " in gc.splitlines()[0]
    assert "<hotspot_log" in (logs / "jit.log").read_text(errors="replace")[:2000]  # -XX:+LogCompilation's file
    [dump] = list(logs.glob("heap_at_exit_*.hprof"))
    assert dump.read_bytes()[:12] == b"JAVA PROFILE"  # an hprof file


def test_jvm_devices_are_refused_for_clusters_bench_does_not_start(capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["--quiet", "race", "--track=nginx", "--test-mode", "--target-hosts=127.0.0.1:1", "--telemetry=jfr,gc"])
    assert rc != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].endswith("--telemetry: jfr, gc configure the JVM of the nodes bench starts, and this race starts "
                            "none (--target-hosts): leave them out, or let bench start the cluster")
    with TrialStore() as store:
        assert store.list_trials() == []  # refused before anything was stored or started


def test_driver_profiling_leaves_a_flame_graph_per_worker(tmp_path: Path) -> None:
    data = tmp_path / "docs.json"
    data.write_text("".join(json.dumps({"n": i}) + "\n" for i in range(4000)))
    track = write_track(tmp_path / "t", [{"operation": {"name": "load", "operation-type": "bulk", "bulk-size": 10,
                                                        "corpora": "c"}, "clients": 2}],
                        indices=[{"name": "p"}],
                        corpora=[{"name": "c", "documents": [{"source-file": str(data), "document-count": 4000,
                                                              "target-index": "p"}]}])
    port = free_port()
    procs = start_in_background(port, delay=0.005)
    try:
        rc = main(["--quiet", "race", f"--track-path={track}", f"--target-hosts=127.0.0.1:{port}",
                   "--worker-processes=2", "--enable-driver-profiling"])
    finally:
        for p in procs:
            p.terminate()
            p.join(10)
    assert rc == 0
    with TrialStore() as store:
        [trial] = store.list_trials()
    section = _profile(trial.id)
    driver = [g for g in section.graphs if g.cluster == "driver"]
    assert sorted(g.node for g in driver) == ["worker-0", "worker-1"] and all(g.samples > 10 for g in driver)
    stacks = parse_collapsed((trials_dir() / trial.id / driver[0].collapsed).read_text())
    frames = {f for s in stacks for f in s.split(";")}
    assert "bench.driver.worker.run_worker" in frames  # the worker's own Python functions, by module and name
    assert (trials_dir() / trial.id / driver[0].html).read_text().startswith("<!doctype html>")


@pytest.mark.timeout(400)
def test_async_profiler_samples_the_same_nodes_with_native_frames(es_target: str, tmp_path: Path) -> None:
    # async-profiler from Maven Central (cached once per download cache), loaded through jcmd JVMTI.agent_load,
    # writing JFR format: the same graphs per task as JFR's sampler, with native and JVM frames besides Java's
    trial_id, tasks, section = _profiled_race(es_target, tmp_path,
                                              "profile-interval:10,profile-sampler:async-profiler")
    assert {g.task for g in section.graphs} == tasks | {"all"}, section
    assert all("no samples" in n for n in section.notes), section.notes  # a task shorter than the interval may have none
    whole = next(g for g in section.graphs if g.task == "all")
    stacks = parse_collapsed((trials_dir() / trial_id / whole.collapsed).read_text())
    frames = {f for s in stacks for f in s.split(";")}
    assert whole.samples > 0 and any(f.startswith("org.elasticsearch.") for f in frames), whole
    assert not any(re.fullmatch(r"0x[0-9a-f]+", f) for f in frames)
    # what JFR's sampler never shows: the JVM's own native code (the JIT compilers, GC), by library and symbol
    assert any(f.startswith("libjvm.so.") for f in frames), sorted(frames)[:50]
    assert not any(f.startswith(".") for f in frames)  # a frame without a library is named by its symbol alone
