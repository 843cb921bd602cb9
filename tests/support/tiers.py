"""Test tiers, as pytest hooks (tests/conftest.py uses them; docs/extending/developing.md tells which tier needs what).

A test's markers follow from the fixtures it requests, directly or through other fixtures:

- ``local_engines`` (engine nodes on this machine; ``es_cluster``, ``es_target``, ``os_ccr_pair`` and the
  like request it) gives ``cluster``;
- ``ray_nodes`` (Ray nodes on this machine) gives ``ray``;
- ``netns_hosts`` (network namespaces as hosts) gives ``netns``;
- ``real_track_trees`` (sweeps over the real rally-tracks/OSB trees: minutes, though nothing starts) gives
  ``tracks``; ``fault_injection`` (the fault matrix: processes killed, files damaged, limits reached) gives
  ``faults``; ``sustained_load`` (races whose point is tens of seconds of paced load: a redline's knee, a
  stalling server, per-second throughput) gives ``load``;
- a test with none of these is ``unit``: ``pytest -m unit`` (``nox -s unit``) needs no Java, no Ray, no root.

The tier guard (tests/support/tier_guard.py) is on in every run: a test that starts an engine node, a Ray node or a
namespace without the marker fails at once with one line naming the fixture to request.
"""

from __future__ import annotations

import os
import tempfile

import pytest

from tests.support import tier_guard

LIVE_MARKERS = tuple(tier_guard.FIXTURES)  # cluster, ray, netns
# Tiers that start nothing the guard watches but are too slow for the unit tier.
SLOW_FIXTURES = {"tracks": "real_track_trees", "faults": "fault_injection", "load": "sustained_load"}
MARKER_OF_FIXTURE = {fixture: marker for marker, fixture in {**tier_guard.FIXTURES, **SLOW_FIXTURES}.items()}
NOT_UNIT = (*LIVE_MARKERS, *SLOW_FIXTURES)

_GUARD = pytest.StashKey[tier_guard.Guard]()
_SAVED_PYTHONPATH = pytest.StashKey[str | None]()
_SEEN = pytest.StashKey[list[str]]()


def configure(config: pytest.Config) -> None:
    fd, log = tempfile.mkstemp(prefix="bench-tier-guard-", suffix=".jsonl")
    os.close(fd)
    guard = tier_guard.Guard(lambda line: pytest.fail.Exception(line, pytrace=False))
    guard.log = log
    config.stash[_GUARD] = guard
    config.stash[_SAVED_PYTHONPATH] = os.environ.get("PYTHONPATH")
    tier_guard.install(guard)


def unconfigure(config: pytest.Config) -> None:
    guard = config.stash.get(_GUARD, None)
    if guard is None:
        return
    tier_guard.uninstall()
    os.environ.pop(tier_guard.ENV, None)
    saved = config.stash[_SAVED_PYTHONPATH]
    if saved is None:
        os.environ.pop("PYTHONPATH", None)
    else:
        os.environ["PYTHONPATH"] = saved
    if guard.log:
        try:
            os.unlink(guard.log)
        except OSError:
            pass


def mark_items(items: list[pytest.Item]) -> None:
    """Markers from the fixtures each item requests (``item.fixturenames`` is their closure); ``unit`` for the
    items that carry no live marker."""
    for item in items:
        for fixture in item.fixturenames:
            marker = MARKER_OF_FIXTURE.get(fixture)
            if marker and item.get_closest_marker(marker) is None:
                item.add_marker(marker)
        if not any(item.get_closest_marker(m) for m in NOT_UNIT):
            item.add_marker("unit")


def enter(item: pytest.Item) -> None:
    """Before the item's setup (session and module fixtures it brings up included): what it may start."""
    guard = item.config.stash[_GUARD]
    guard.test = item.nodeid
    guard.allowed = frozenset(m for m in LIVE_MARKERS if item.get_closest_marker(m) is not None)
    tier_guard.child_env(guard, os.environ)


def leave(item: pytest.Item) -> None:
    guard = item.config.stash[_GUARD]
    guard.test = None
    tier_guard.child_env(guard, os.environ)


def refuse(item: pytest.Item, report: pytest.TestReport) -> None:
    """A refusal in this phase (in the test's process or one it started) fails the phase with its one line,
    whatever the test made of the error it got."""
    guard = item.config.stash[_GUARD]
    seen = item.stash.setdefault(_SEEN, [])
    lines = tier_guard.refusals(guard.log, item.nodeid, seen)
    if lines:
        seen.extend(lines)
        report.outcome = "failed"
        report.longrepr = "\n".join(lines)
