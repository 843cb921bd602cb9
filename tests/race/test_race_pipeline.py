"""The race's seams, plugged in-process straight into their registries (``register_source``, ``register_race_hook``): a cluster
source decides where a real race's clusters come from and stops what it handed out; race hooks run in their
documented order around a real race, and a hook failing in any phase ends the race as the built-in steps'
failures do (before provisioning: nothing stored or started; later: trial stored failed, clusters stopped,
samples kept)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from bench.cli import main
from bench.http.client import ClientOptions, ClusterTarget
from bench.provision.model import ClusterInfo
from bench.race.cluster_source import RaceClusters, register_source, unregister_source
from bench.race.options import RaceOptions
from bench.race.pipeline import RaceHook, RacePlan, RaceSchedule, RaceTargets, register_race_hook, unregister_race_hook
from bench.results.summary import Summary
from bench.trials.sqlite import TrialStore
from bench.util.errors import ConfigError

ITERATIONS = 5


def write_track(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    schedule = [{"operation": {"name": "health", "operation-type": "cluster-health"}, "clients": 1,
                 "iterations": ITERATIONS}]
    (root / "track.json").write_text(json.dumps({"version": 2, "description": "pipeline test track",
                                                 "indices": [], "corpora": [], "schedule": schedule}))
    return root


class SessionCluster(RaceClusters):
    """Hands out the session's Elasticsearch as cluster 'borrowed' and records what the race asked of it."""

    def __init__(self, info: ClusterInfo, events: list[str]) -> None:
        self.planned = []
        self.info, self.events = info, events

    def start(self, trial_id: str, options: ClientOptions, console: object) -> list[ClusterTarget]:
        self.events.append("start")
        return [ClusterTarget(name="borrowed", hosts=[h.removeprefix("http://") for h in self.info.hosts],
                              options=options)]

    def stop(self, keep: bool) -> list[str]:
        self.events.append(f"stop keep={keep}")
        return []


@pytest.fixture
def source(es_cluster: ClusterInfo) -> Iterator[list[str]]:
    """A source that takes races tagged source:session; yields the events it records."""
    events: list[str] = []

    def session_source(opts: RaceOptions) -> RaceClusters | None:
        return SessionCluster(es_cluster, events) if opts.user_tags.get("source") == "session" else None

    # Straight into the seam's registry: a source lives in the race's own process only, so this needs no
    # extension that load-driver workers would have to import.
    register_source(session_source)
    yield events
    unregister_source(session_source)


def race(tmp_path: Path, *extra: str) -> int:
    return main(["--quiet", "race", f"--track-path={write_track(tmp_path / 'track')}", "--user-tag=source:session",
                 *extra])


def test_registered_source_provides_the_clusters_of_a_real_race(tmp_path: Path, source: list[str]) -> None:
    assert race(tmp_path, "--keep-cluster") == 0
    with TrialStore() as store:
        (trial,) = store.list_trials()
        assert len(store.samples(trial.id)) == ITERATIONS
    assert trial.status == "complete"
    assert [c["name"] for c in trial.clusters] == ["borrowed"]  # the race ran against what the source gave
    assert source == ["start", "stop keep=True"]  # asked to stop what it started, keeping it as told


def recording_hook(label: str, events: list[str], fail: str | None = None) -> type[RaceHook]:
    def step(name: str) -> None:
        events.append(f"{label}:{name}")
        if name == fail:
            raise ConfigError(f"hook {label} refuses in {name}")

    class Recording(RaceHook):
        def before_provisioning(self, race: RacePlan) -> None:
            step("before_provisioning")

        def prepare(self, race: RaceTargets) -> RaceOptions:
            assert [t.name for t in race.targets] == ["borrowed"]
            step("prepare")
            return race.opts

        @contextlib.asynccontextmanager
        async def around_schedule(self, race: RaceSchedule) -> AsyncIterator[None]:
            assert [c["name"] for c in race.clusters] == ["borrowed"]
            step("enter")
            try:
                yield
            finally:
                step("exit")

        def finish(self, race: RaceTargets, summary: Summary | None) -> Summary | None:
            assert summary is not None  # the schedule's samples are summarised before finish
            step("finish")
            return summary.model_copy(update={"notes": [*summary.notes, f"noted by {label}"]})

    return Recording


@pytest.fixture
def hooks(source: list[str]) -> Iterator[tuple[list[str], list[type[RaceHook]]]]:
    registered: list[type[RaceHook]] = []
    yield source, registered
    for h in registered:
        unregister_race_hook(h)


def add_hooks(registered: list[type[RaceHook]], *hooks: type[RaceHook]) -> None:
    for h in hooks:  # race hooks run in the race's own process only (see the source fixture)
        register_race_hook(h)
    registered.extend(hooks)


def test_hooks_run_in_documented_order_around_a_real_race(tmp_path: Path, hooks) -> None:
    events, registered = hooks
    add_hooks(registered, recording_hook("a", events), recording_hook("b", events))
    assert race(tmp_path) == 0
    assert events == ["a:before_provisioning", "b:before_provisioning", "start", "a:prepare", "b:prepare",
                      "a:enter", "b:enter", "b:exit", "a:exit", "a:finish", "b:finish", "stop keep=False"]
    with TrialStore() as store:
        (trial,) = store.list_trials()
        summary = store.summary(trial.id)
    assert trial.status == "complete"
    assert summary is not None and summary.notes[-2:] == ["noted by a", "noted by b"]


@pytest.mark.parametrize("phase", ["prepare", "enter", "exit", "finish"])
def test_hook_failure_after_provisioning_stores_failed_trial_and_stops_clusters(
        tmp_path: Path, hooks, phase: str, capsys: pytest.CaptureFixture[str]) -> None:
    events, registered = hooks
    add_hooks(registered, recording_hook("a", events, fail=phase))
    assert race(tmp_path) != 0
    assert capsys.readouterr().err.strip().splitlines()[-1] == f"error: hook a refuses in {phase}"
    assert events[-1] == "stop keep=False"
    if phase == "enter":  # the context that failed to enter is not left; nothing ran
        assert "a:exit" not in events
    elif phase != "prepare":
        assert events.index("a:exit") < events.index("stop keep=False")
    with TrialStore() as store:
        (trial,) = store.list_trials()
        samples = store.samples(trial.id)
        summary = store.summary(trial.id)
    assert trial.status == "failed"
    assert trial.error == f"hook a refuses in {phase}"
    # Nothing measured is lost: a schedule that ran keeps its samples and its summary.
    assert len(samples) == (ITERATIONS if phase in ("exit", "finish") else 0)
    assert (summary is not None) == (phase in ("exit", "finish"))


def test_hook_refusal_before_provisioning_stores_and_starts_nothing(tmp_path: Path, hooks,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    events, registered = hooks
    add_hooks(registered, recording_hook("a", events, fail="before_provisioning"))
    assert race(tmp_path) != 0
    assert capsys.readouterr().err.strip().endswith("hook a refuses in before_provisioning")
    assert events == ["a:before_provisioning"]  # no cluster started, so none to stop
    with TrialStore() as store:
        assert store.list_trials() == []
