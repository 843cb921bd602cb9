"""Experiment files and the order of their races (pure: no cluster)."""

from __future__ import annotations

import pytest

from bench.errors import ConfigError
from bench.experiment import load_experiment, plan, race_options
from bench.home import project_root


def _write(tmp_path, text: str):
    p = tmp_path / "exp.yml"
    p.write_text(text)
    return p


BASIC = """
name: demo
repetitions: 3
race: {track: nginx, test-mode: true, target-hosts: "127.0.0.1:9200", track-params: {doc_count: 100}}
variants:
  baseline: {}
  big-bulk: {track-params: {bulk_size: 1000}}
  compressed: {client-options: {http_compress: true}}
"""


def test_interleaved_order_rotates_variants_per_repetition(tmp_path):
    exp = load_experiment(_write(tmp_path, BASIC))
    races = plan(exp, "run1")
    assert [(r.variant, r.repetition) for r in races] == [
        ("baseline", 1), ("big-bulk", 1), ("compressed", 1),
        ("big-bulk", 2), ("compressed", 2), ("baseline", 2),
        ("compressed", 3), ("baseline", 3), ("big-bulk", 3)]


def test_random_order_is_a_seeded_shuffle_of_the_whole_matrix(tmp_path):
    exp = load_experiment(_write(tmp_path, BASIC + "order: random\n"))
    a, b, c = plan(exp, "run1"), plan(exp, "run1"), plan(exp, "run2")
    assert [r.key for r in a] == [r.key for r in b]  # resume sees the same order
    assert sorted(r.key for r in a) == sorted(r.key for r in c) and len(a) == 9
    assert [r.key for r in a] != [r.key for r in c]


def test_race_options_merge_race_track_and_variant_and_tag_each_race(tmp_path):
    exp = load_experiment(_write(tmp_path, BASIC))
    r = next(x for x in plan(exp, "run1") if x.variant == "big-bulk")
    opts = race_options(exp, r, run_id="run1")
    assert opts.track == "nginx" and opts.test_mode and opts.track_params == {"doc_count": 100, "bulk_size": 1000}
    assert opts.user_tags == {"experiment": "demo", "experiment-run": "run1", "variant": "big-bulk",
                              "repetition": "1", "experiment-track": "0"}


@pytest.mark.parametrize("text, message", [
    ("name: x\nvariants: {a: {}}\nbaseline: b\nrace: {track: nginx}\n", "baseline 'b' is not one of"),
    ("name: x\nvariants: {a: {no-such-option: 1}}\nrace: {track: nginx}\n", "variants.a: no-such-option"),
    ("name: x\nvariants: {a: {}}\n", "no track"),
    ("name: x\nvariants: {a: {user-tags: {k: v}}}\nrace: {track: nginx}\n", "set by the experiment itself"),
    ("name: x\nrepetitions: 0\nvariants: {a: {}}\n", "repetitions"),
    ("[1, 2]", "expected a mapping"),
])
def test_bad_experiment_files_are_one_line_errors(tmp_path, text, message):
    with pytest.raises(ConfigError) as e:
        load_experiment(_write(tmp_path, text))
    assert message in str(e.value) and "\n" not in str(e.value) and "exp.yml" in str(e.value)


def test_shipped_example_experiments_load():
    files = sorted((project_root() / "experiments").glob("*.yml"))
    assert files
    for f in files:
        exp = load_experiment(f)
        assert plan(exp, "x")
