"""Rally tracks as users have them: only the selected challenge must be runnable, Rally's syntax variants
(string tags, unit-aware throughput, Jinja floats, schedule names, dependencies) and ``bench info``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.cli import main
from bench.driver import schedule as schedule_module
from bench.driver.schedule import Pacer, register_scheduler
from bench.track.loader import load_track
from bench.trials.sqlite import TrialStore
from bench.util.errors import TrackError

DATA = Path(__file__).parents[1] / "data"
LOOKALIKE = DATA / "rally_lookalike"


def write_track(folder: Path, track: dict) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "track.json").write_text(json.dumps(track))
    return folder


def one_task_track(folder: Path, task: dict, *, corpora: bool = False, extra: dict | None = None) -> Path:
    track: dict = {"version": 2, "indices": [{"name": "i"}], "schedule": [task], **(extra or {})}
    if corpora:
        track["corpora"] = [{"name": "c", "documents": [{"source-file": "d.json", "document-count": 10}]}]
    return write_track(folder, track)


# ---------------------------------------------------------------- the selected challenge only


def test_unrunnable_challenges_and_unused_operations_do_not_block_the_selected_one():
    track = load_track(LOOKALIKE, {})
    default = track.challenge(None)  # what a race does: no error
    assert default.name == "append-no-conflicts" and default.problems() == []
    other = track.find_challenge("custom-runners")
    assert [t.name for t in other.tasks() if t.problem] == ["percolate-warmup", "percolate-search"]
    with pytest.raises(TrackError) as e:
        track.challenge("custom-runners")
    msg = str(e.value)
    assert msg.startswith(f"{LOOKALIKE / 'track.json'}: challenge 'custom-runners', task 'percolate-warmup': ")
    assert "unsupported operation-type 'percolate-warmup'" in msg and "1 more task(s)" in msg and "\n" not in msg


def test_race_of_an_unrunnable_challenge_is_one_line_before_any_trial(capsys):
    rc = main(["--quiet", "race", f"--track-path={LOOKALIKE}", "--challenge=custom-runners",
               "--target-hosts=127.0.0.1:1"])
    err = capsys.readouterr().err
    assert rc != 0 and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert "challenge 'custom-runners', task 'percolate-warmup'" in err and "percolate-warmup" in err
    with TrialStore() as store:
        assert store.list_trials() == []


def test_check_challenge_names_the_selected_challenge(tmp_path):
    folder = write_track(tmp_path / "t", {"challenges": [
        {"name": "good", "default": True, "schedule": [{"operation": "refresh"}]},
        {"name": "bad", "schedule": [{"name": "nodes", "operation": {"operation-type": "frobnicate"}}]}]})
    assert load_track(folder, {}, check_challenge=True).challenge(None).name == "good"
    with pytest.raises(TrackError, match=r"challenge 'bad', task 'nodes': operation 'frobnicate' has unsupported"):
        load_track(folder, {}, challenge="bad", check_challenge=True)


# ---------------------------------------------------------------- Rally's syntax variants


def test_lookalike_syntax_is_read_as_rally_reads_it():
    tasks = {t.name: t for t in load_track(LOOKALIKE, {}).challenge(None).tasks()}
    assert tasks["delete-index"].tags == ["setup"] and tasks["create-index"].tags == ["setup"]
    bulk = tasks["index-append"]
    assert bulk.operation.params["bulk-size"] == 5 and isinstance(bulk.operation.params["bulk-size"], int)
    assert (bulk.target_throughput, bulk.throughput_unit) == (50.0, "docs/s")
    assert bulk.meta == {"phase": "ingest"}
    assert tasks["default"].iterations == 5 and tasks["default"].schedule == "poisson"
    assert (tasks["default"].target_throughput, tasks["default"].throughput_unit) == (20.0, "ops/s")
    assert tasks["term"].throughput_unit == "ops/s" and tasks["check-cluster-health"].include_in_reporting is False


def test_fractional_clients_are_an_error_naming_the_value(tmp_path):
    folder = one_task_track(tmp_path / "t", {"operation": "refresh", "clients": 2.5})
    with pytest.raises(TrackError, match=r"schedule\[0\]\.clients: .*fractional part \(got 2\.5\)"):
        load_track(folder, {})
    folder = one_task_track(tmp_path / "u", {"operation": "refresh", "clients": 4.0, "iterations": 10.0})
    task = load_track(folder, {}).challenge(None).tasks()[0]
    assert (task.clients, task.iterations) == (4, 10)


def test_fractional_bulk_size_cannot_run(tmp_path):
    folder = one_task_track(tmp_path / "t", {"operation": {"operation-type": "bulk", "bulk-size": 2.5}}, corpora=True)
    with pytest.raises(TrackError, match=r"bulk-size 2\.5: use a positive integer"):
        load_track(folder, {}).challenge(None)


@pytest.mark.parametrize(("value", "expected"), [(10, (10, "ops/s")), ("10", None), ("100 ops/s", (100, "ops/s")),
                                                 ("0.5 docs/s", (0.5, "docs/s")), ("10docs/s", (10, "docs/s"))])
def test_target_throughput_forms(tmp_path, value, expected):
    folder = one_task_track(tmp_path / "t", {"operation": {"operation-type": "bulk", "bulk-size": 5},
                                             "target-throughput": value}, corpora=True)
    if expected is None:
        with pytest.raises(TrackError, match=r"target-throughput: cannot read '10'"):
            load_track(folder, {})
        return
    task = load_track(folder, {}).challenge(None).tasks()[0]
    assert (task.target_throughput, task.throughput_unit) == expected


@pytest.mark.parametrize(("op", "unit"), [({"operation-type": "bulk", "bulk-size": 5}, "MB/s"),
                                          ({"operation-type": "search"}, "docs/s")])
def test_a_throughput_unit_the_operation_does_not_report_cannot_run(tmp_path, op, unit):
    folder = one_task_track(tmp_path / "t", {"operation": op, "target-throughput": f"10 {unit}"}, corpora=True)
    with pytest.raises(TrackError, match=f"target-throughput is in {unit} but a '{op['operation-type']}'"):
        load_track(folder, {}).challenge(None)


def test_schedule_names_builtin_unknown_and_registered(tmp_path, monkeypatch):
    folder = one_task_track(tmp_path / "t", {"operation": "refresh", "schedule": "daily-peaks",
                                             "target-throughput": 4, "iterations": 3})
    with pytest.raises(TrackError, match="unknown schedule 'daily-peaks' .known: deterministic, poisson"):
        load_track(folder, {}).challenge(None)
    monkeypatch.setattr(schedule_module, "_SCHEDULERS", {})

    class Every:  # Rally's simple scheduler shape: (task, target requests/s of this client)
        def __init__(self, task, rate):
            self.wait = 2 / rate

        def next(self, current):
            return current + self.wait

    register_scheduler("daily-peaks", Every)
    task = load_track(folder, {}).challenge(None).tasks()[0]
    pacer = Pacer(task)
    assert [pacer.next_offset() for _ in range(3)] == [0.0, 0.5, 1.0]


def test_satisfied_dependencies_load_without_pip(tmp_path, bench_home):
    folder = one_task_track(tmp_path / "u", {"operation": "refresh"}, extra={"dependencies": ["tabulate>=0.9"]})
    assert load_track(folder, {}, offline=True).dependencies == ["tabulate>=0.9"]
    assert not (bench_home / "libs").exists()


# ---------------------------------------------------------------- unit-aware pacing (Rally's UnitAwareScheduler)


def _task(tmp_path, **kw):
    task = {"operation": {"operation-type": "bulk", "bulk-size": 5}, **kw}
    return load_track(one_task_track(tmp_path / "t", task, corpora=True), {}).challenge(None).tasks()[0]


def test_docs_per_second_paces_by_the_documents_of_each_bulk(tmp_path):
    pacer = Pacer(_task(tmp_path, clients=2, **{"target-throughput": "100 docs/s"}))
    assert pacer.next_offset() == 0.0  # the weight is not known before the first answer
    pacer.after_request(0.01, 5, "docs")  # 100 docs/s / 2 clients / 5 docs = 10 requests/s
    assert [round(pacer.next_offset(), 6) for _ in range(2)] == [0.1, 0.2]
    pacer.after_request(0.2, 10, "docs")  # bigger bulks: 5 requests/s from here on
    assert round(pacer.next_offset(), 6) == 0.4
    pacer.after_request(0.4, 0, "docs")  # a failed request (no weight) keeps the pace
    assert round(pacer.next_offset(), 6) == 0.6
    with pytest.raises(TrackError, match="target-throughput is in docs/s but its operation 'bulk' reports ops/s"):
        pacer.after_request(0.6, 3, "ops")


def test_plain_and_ops_targets_pace_requests_whatever_the_runner_counts(tmp_path):
    pacer = Pacer(_task(tmp_path, **{"target-throughput": 4}))
    pacer.after_request(0.0, 5000, "docs")
    assert [pacer.next_offset() for _ in range(3)] == [0.0, 0.25, 0.5]
    assert Pacer(_task(tmp_path)).next_offset() is None  # no target: unthrottled


# ---------------------------------------------------------------- bench info


def test_info_lists_challenges_schedules_and_what_cannot_run(capsys):
    assert main(["info", f"--track-path={LOOKALIKE}"]) == 0
    out = capsys.readouterr().out
    assert "Description: Web server logs shaped like Rally's http_logs" in out
    assert "lookalike" in out and "documents-lookalike.json" in out and "4.4 KB" in out
    assert "append-no-conflicts (default)" in out and "no: 2 of 2 tasks" in out
    row = next(line for line in out.splitlines() if " index-append " in line)
    assert "bulk" in row and "50 docs/s" in row and row.rstrip().endswith("ok")
    row = next(line for line in out.splitlines() if " percolate-search " in line)
    assert "CANNOT RUN: operation 'percolate-search' has unsupported operation-type 'percolate-search'" in row
    assert "not reported" in next(line for line in out.splitlines() if " check-cluster-health " in line)


def test_info_of_one_challenge_and_of_a_builtin_track(capsys):
    assert main(["info", "--track=nginx", "--challenge=index-only"]) == 0
    out = capsys.readouterr().out
    assert "Schedule of challenge 'index-only'" in out and "Schedule of challenge 'append-no-conflicts'" not in out
    assert "append-no-conflicts (default)" in out  # the challenge list stays complete
    assert main(["info", "--track=nginx", "--challenge=nope"]) != 0
    assert "unknown challenge 'nope'" in capsys.readouterr().err


def test_offline_race_names_where_it_looked_for_the_corpus(tmp_path, capsys):
    folder = write_track(tmp_path / "t", {"version": 2, "indices": [{"name": "i"}], "corpora": [
        {"name": "logs", "base-url": "http://127.0.0.1:9/never", "documents": [
            {"source-file": "documents.json.bz2", "document-count": 10}]}],
        "schedule": [{"operation": {"operation-type": "bulk", "bulk-size": 5}}]})
    rc = main(["--quiet", "race", f"--track-path={folder}", "--offline", f"--corpus-dir={tmp_path / 'mine'}",
               "--target-hosts=127.0.0.1:1"])
    err = capsys.readouterr().err
    assert rc != 0 and len(err.strip().splitlines()) == 1 and "(--offline: no download)" in err
    assert str(tmp_path / "mine" / "logs" / "documents.json.bz2") in err and "--corpus-dir=DIR holding logs/" in err


def test_rallys_template_variables_and_comparisons_of_absent_parameters(tmp_path):
    # As in rally-tracks' github_archive (build_flavor), nyc_taxis (source_mode) and random_vector (index_type):
    # Rally renders for build flavor "default"; an absent parameter compares unequal instead of failing.
    folder = tmp_path / "t"
    folder.mkdir()
    (folder / "track.json").write_text(
        '{"version": 2, "indices": [{"name": "i"{% if build_flavor != "serverless" and not serverless_operator %}, '
        '"body": "index.json"{% endif %}}],'
        ' "schedule": [{"operation": {"operation-type": "refresh"{% if index_type == "datastream" %}, "x": 1'
        '{% endif %}}}]}')
    (folder / "index.json").write_text('{"mappings": {"properties": {"f": {"type": "text"'
                                       '{% if source_mode == "synthetic" %}, "store": true{% endif %}}}}}')
    track = load_track(folder, {}, check_challenge=True)
    assert track.indices[0].body_content == {"mappings": {"properties": {"f": {"type": "text"}}}}
    synthetic = load_track(folder, {"source_mode": "synthetic", "index_type": "x"}, check_challenge=True)
    assert synthetic.indices[0].body_content["mappings"]["properties"]["f"]["store"] is True
    # An absent parameter printed renders as '' (Rally's Jinja); leaving invalid JSON it is an error naming it.
    (folder / "index.json").write_text('{"settings": {"number_of_shards": {{ shards }}}}')
    with pytest.raises(TrackError) as e:
        load_track(folder, {})
    assert str(e.value) == (f"{folder / 'index.json'}: undefined template variable(s) shards (index.json:1) render as "
                            "empty (as in Rally), which leaves invalid JSON (line 1 column 35: invalid JSON: Expecting value; "
                            'offending line: {"settings": {"number_of_shards": }}); pass --track-params=shards:VALUE')


def test_undefined_variables_render_empty_with_one_warning_line_and_are_recorded(tmp_path, capsys):
    # As bring-your-own ("index": "{{index}}") and elastic/apm ("wait_for_status": "{{expected_cluster_health}}").
    folder = write_track(tmp_path / "t", {
        "version": 2, "indices": [{"name": "i"}],
        "operations": [{"name": "q", "operation-type": "search", "index": "{{index}}x", "q": "{{ word }}{{index}}"}],
        "challenges": [
            {"name": "search", "default": True, "schedule": [{"operation": "q"}]},
            {"name": "health", "schedule": [{"operation": {
                "operation-type": "cluster-health", "request-params": {"wait_for_status": "{{expected_health}}"}}}]},
        ]})
    track = load_track(folder, {}, check_challenge=True)
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"bench: warning: {folder / 'track.json'}: undefined template variable(s) index (track.json:1), "
                   "word (track.json:1), expected_health (track.json:1) rendered as empty, as Rally does; pass "
                   "--track-params=index:VALUE,word:VALUE,expected_health:VALUE to set them"]
    assert track.undefined_params == ["index", "word", "expected_health"]
    assert track.challenge(None).tasks()[0].operation.params == {"index": "x", "q": ""}
    # An empty value bench knows cannot work is the task's problem, naming the variables.
    with pytest.raises(TrackError) as e:
        track.challenge("health")
    assert "has request-params wait_for_status '': use green, yellow or red (the track leaves index, word, " \
           "expected_health undefined, rendered as empty: pass --track-params=" in str(e.value)
    assert load_track(folder, {"index": "i", "word": "w", "expected_health": "green"}).undefined_params == []
    assert main(["info", f"--track-path={folder}"]) == 0
    out = capsys.readouterr().out
    assert "Undefined template variables (rendered as empty, as Rally does): index, word, expected_health; set " \
           "them with --track-params=index:VALUE,word:VALUE,expected_health:VALUE" in out


def test_undefined_variables_are_stored_with_the_trial_options(tmp_path):
    from bench.race.options import RaceOptions
    from bench.race.race import _stored_options

    folder = write_track(tmp_path / "t", {"version": 2, "indices": [{"name": "i"}], "schedule": [
        {"operation": {"operation-type": "search", "q": "{{ word }}"}}]})
    opts = RaceOptions(track_path=folder)
    assert _stored_options(opts, load_track(folder, {}))["undefined_track_params"] == ["word"]
    assert "undefined_track_params" not in _stored_options(opts, load_track(folder, {"word": "w"}))
