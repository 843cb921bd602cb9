"""Messages that point somewhere point at something that works: hinted commands parse, a bad track parameter is
named with its value, and the experiment dry run explains what it prints (pure: no cluster)."""

from __future__ import annotations

import re
import shlex

import pytest

from bench.cli import build_parser, main
from bench.race.experiment import dry_run_lines, load_experiment
from bench.track.loader import find_track, load_track
from bench.track.track_params import blame_param
from bench.util.errors import TrackError
from tests.race.test_race import write_track
from tests.support.checkout import ROOT

HINT = re.compile(r"""(?:run|see|use|with|until) ['`]bench ([^'`]+)['`]""")


def _hints() -> list[tuple[str, str]]:
    found = []
    for path in sorted((ROOT / "bench").rglob("*.py")):
        for cmd in HINT.findall(path.read_text()):
            found.append((path.name, re.sub(r"\{[^}]*\}", "x", cmd)))  # an f-string's values
    return found


def test_there_are_command_hints_to_check():
    assert ("sqlite.py", "list trials") in _hints()


@pytest.mark.parametrize("where,cmd", _hints())
def test_every_command_a_message_suggests_parses(where, cmd):
    try:
        build_parser().parse_args(shlex.split(cmd))
    except SystemExit:
        pytest.fail(f"{where} suggests 'bench {cmd}', which bench does not accept")


def test_unknown_trial_names_a_listing_command_that_works(capsys):
    assert main(["show", "abcdef"]) != 0
    err = capsys.readouterr().err
    assert "run 'bench list trials'" in err
    assert main(["list"]) == 0  # the bare command lists trials too


@pytest.mark.parametrize("param,value,used", [
    ("doc_count", "abc", '"document-count"'),  # track.json
    ("number_of_shards", "x", '"index.number_of_shards"'),  # the index body file
])
def test_a_track_param_that_breaks_the_rendered_json_is_named_with_its_value(param, value, used):
    with pytest.raises(TrackError) as e:
        load_track(find_track("nginx", None), {param: value})
    msg = str(e.value)
    assert msg.startswith(f"--track-params {param}:{value}: the track uses {param} as {used}; ")
    assert "offending line" not in msg and "column" not in msg


def test_python_values_and_broken_strings_are_explained(tmp_path):
    root = write_track(tmp_path / "t", [{"operation": {"name": "h", "operation-type": "cluster-health"}}])
    source = (root / "track.json").read_text().replace('"description": "test track"',
                                                        '"description": "{{ label }}", "meta": {{ flag }}')
    (root / "track.json").write_text(source)
    with pytest.raises(TrackError, match=r"--track-params flag:true: the track uses flag as \"meta\"; Jinja2 "
                                         r"writes it as Python's True"):
        load_track(root, {"flag": True, "label": "x"})
    with pytest.raises(TrackError, match=r'--track-params label:a"b: the track uses label as "description"; the '
                                         r"value breaks the JSON string"):
        load_track(root, {"flag": 1, "label": 'a"b'})


def test_a_broken_track_that_is_no_parameters_fault_still_shows_its_line(tmp_path):
    root = write_track(tmp_path / "t", [{"operation": {"name": "h", "operation-type": "cluster-health"}}])
    (root / "track.json").write_text((root / "track.json").read_text().replace('"version": 2', '"version": abc'))
    with pytest.raises(TrackError, match="offending line"):
        load_track(root, {})
    assert blame_param('"version": abc,', 12, {"other": "abcd"}) is None  # the error is not inside its text


def test_the_experiment_dry_run_explains_every_field(capsys):
    exp = load_experiment(ROOT / "experiments" / "bulk-clients.yml")
    lines = dry_run_lines(exp, "dry-run")
    text = "\n".join(lines)
    assert lines[0].startswith("Experiment bulk-clients: 4 races = 2 variant(s) × 2 repetition(s) × 1 track(s)")
    assert ("Options of every race (bench race flags): --track=nginx --challenge=index-only "
            "--track-params=doc_count:200000,warmup_time_period:0") in text
    assert "  one-client (baseline): --track-params=bulk_indexing_clients:1" in lines
    table = [line.split() for line in lines if re.match(r"  (#|\d) ", line)]
    header, rows = table[0], table[1:5]
    assert header == ["#", "variant", "repetition", "track/challenge"]
    assert rows[0] == ["1", "one-client", "1", "of", "2", "nginx/index-only"]
    # Every column has its legend line.
    for field in header:
        assert any(line.startswith(f"  {field} .") for line in lines), field
    assert "?" not in text
