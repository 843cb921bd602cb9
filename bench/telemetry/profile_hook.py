"""The profile device's steps in a race: recordings start right before the schedule and stop when it ended
(also when it failed: the recordings are kept with the trial then too); once the race is measured, the flame
graphs per node and task go into the trial and the summary's ``profile`` section."""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import time
from collections.abc import AsyncIterator
from pathlib import Path

from bench.race.pipeline import RaceHook, RaceSchedule, RaceTargets
from bench.results.summary import Summary
from bench.telemetry import async_profiler
from bench.telemetry.config import resolve_telemetry
from bench.telemetry.jvm import local_jvms
from bench.telemetry.profile import (
    DEVICE,
    SECTION,
    ProfileSection,
    Recording,
    driver_graphs,
    keep,
    safe,
    start_recordings,
    stop_recordings,
    task_windows,
    template,
    work_dir,
)
from bench.trials.model import Trials
from bench.util.errors import ConfigError
from bench.util.home import trials_dir


class ProfileHook(RaceHook):
    def __init__(self) -> None:
        self._done: tuple[Trials, str, tuple[float, float], list[Recording], list[str], float] | None = None
        self._trial: str | None = None  # with --enable-driver-profiling: the trial whose driver profiles to draw

    @contextlib.asynccontextmanager
    async def around_schedule(self, race: RaceSchedule) -> AsyncIterator[None]:
        o = race.opts
        if o.enable_driver_profiling:
            self._trial = race.trial_id
        config = resolve_telemetry(o.telemetry, o.telemetry_params, o.telemetry_profile)
        if DEVICE not in config.devices:
            yield
            return
        wanted = config.params.get("profile-clusters")
        unknown = [c for c in wanted or [] if c not in {t.name for t in race.targets}]
        if unknown:
            raise ConfigError(f"--telemetry-params: profile-clusters names unknown cluster(s) {', '.join(unknown)}")
        targets = [t for t in race.targets if not wanted or t.name in wanted]
        jvms = await local_jvms(targets)
        if not jvms:
            raise ConfigError(f"telemetry device profile: no node of cluster(s) {', '.join(t.name for t in targets)} "
                              "runs on this machine (the device attaches to the nodes' JVMs); leave it out")
        interval = float(config.params.get("profile-interval") or 20.0)
        sampler = config.params.get("profile-sampler") or "jfr"
        # a download the first time: off the event loop, and before any node is attached to
        lib = await asyncio.to_thread(async_profiler.library) if sampler == "async-profiler" else None
        folder = work_dir()
        name = f"bench-profile-{safe(race.trial_id)[:16]}"
        try:
            agent = async_profiler.staged(lib) if lib is not None else None
            recordings = await start_recordings(jvms, template(config, folder), name, folder, agent, interval)
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        start = time.time()
        try:
            yield
        finally:
            end = time.time()
            failed = await stop_recordings(recordings, name)
            for r in recordings:  # kept with the trial whatever happens next
                if r.file.is_file():
                    target = trials_dir() / race.trial_id / "profiles" / safe(r.cluster) / safe(r.node)
                    target.mkdir(parents=True, exist_ok=True)
                    r.file = Path(shutil.move(str(r.file), target / "recording.jfr"))
            shutil.rmtree(folder, ignore_errors=True)
            self._done = (race.store, race.trial_id, (start, end), recordings, failed, interval)

    def finish(self, race: RaceTargets, summary: Summary | None) -> Summary | None:
        if self._done is None and self._trial is None:
            return summary
        section = ProfileSection(interval_ms=20.0)
        if self._done is not None:
            store, trial_id, schedule, recordings, failed, interval = self._done
            section = keep(recordings, task_windows(store, trial_id, schedule), trials_dir() / trial_id, interval)
            section.notes = [*failed, *section.notes]
        if self._trial is not None:
            graphs, notes = driver_graphs(trials_dir() / self._trial, race.opts.worker_processes)
            section.graphs += graphs
            section.notes += notes
        return (summary or Summary()).with_section(SECTION, section.model_dump(mode="json"), section.notes)
