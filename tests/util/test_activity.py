"""The spinner of long steps (bench.util.activity): on a terminal it says what the step is doing now; off the
terminal and with --quiet it shows nothing."""

from __future__ import annotations

import io

from rich.console import Console

from bench.track.corpus import prepare_corpora
from bench.track.loader import load_track
from bench.util import activity
from tests.support.compare_trials import write_compare_track


def _console(terminal: bool) -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, force_terminal=terminal, width=200, color_system=None), out


def _prepare(tmp_path, monkeypatch, console: Console, enabled: bool = True) -> None:
    monkeypatch.setenv("BENCH_HOME", str(tmp_path / "home"))
    track = load_track(write_compare_track(tmp_path / "track"), {})
    with activity.step("Preparing corpora", enabled=enabled, console=console):
        prepare_corpora(track, track.challenge(None), test_mode=False)


def test_a_terminal_sees_what_the_step_is_doing(tmp_path, monkeypatch):
    console, out = _console(terminal=True)
    _prepare(tmp_path, monkeypatch, console)
    # The corpus code said what it did; the spinner showed it (and, being transient, took it away again).
    assert "Preparing corpora: corpus c: counting the documents of docs.json" in out.getvalue()
    activity.say("after the step")  # no step running: nothing to tell, no error


def test_quiet_and_non_terminal_output_stay_clean(tmp_path, monkeypatch):
    for terminal, enabled in ((False, True), (True, False)):
        console, out = _console(terminal)
        _prepare(tmp_path, monkeypatch, console, enabled)
        assert out.getvalue() == "", (terminal, enabled)
