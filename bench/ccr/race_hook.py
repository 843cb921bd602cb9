"""CCR's steps in a race: refuse soft-deletes-off where it cannot work before a cluster starts, wire remote
clusters, licenses and the ccr-stats device before the schedule, count documents and add the CCR section of
the summary after it (while the clusters still run)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from rich.console import Console

from bench.ccr.drill_figures import FailoverFigures
from bench.ccr.drill_section import DRILLS_SECTION, DrillsSection, bootstraps_of, notes, unmeasured
from bench.ccr.failover import drill_of, drive_failover, parse_spec
from bench.ccr.prepare import CcrRace, check_soft_deletes, prepare_ccr_race
from bench.ccr.section import SECTION, build_section
from bench.driver.coordinator import RunStep
from bench.race.options import RaceOptions
from bench.race.pipeline import RaceHook, RacePlan, RaceSchedule, RaceTargets
from bench.results.summary import Summary
from bench.track.model import Parallel, Task


class CcrHook(RaceHook):
    def __init__(self) -> None:
        self.ccr: CcrRace | None = None
        self.schedule: RaceSchedule | None = None
        self.failovers: list[FailoverFigures] = []
        self.console: Console | None = None

    def before_provisioning(self, race: RacePlan) -> None:
        # Known before provisioning: do not start a cluster only to refuse its car afterwards.
        for c in race.clusters:
            if c.car.variables.get("index_soft_deletes") is False and c.version is not None:
                check_soft_deletes(c.name, c.engine, c.version, c.car.names, None)

    def prepare(self, race: RaceTargets) -> RaceOptions:
        self.console = race.console
        opts, self.ccr = prepare_ccr_race(race.opts, race.cars, race.track, race.challenge, race.targets,
                                          race.console)
        return opts

    @contextlib.asynccontextmanager
    async def around_schedule(self, race: RaceSchedule) -> AsyncIterator[None]:
        self.schedule = race  # the drills need the trial's samples and the clusters' kill switch
        yield

    async def drive_step(self, race: RaceSchedule, step: Task | Parallel, run: RunStep) -> bool:
        """A failover drill's parallel block: the hook runs the indexing and the drill (bench.ccr.failover)."""
        drill = drill_of(step)
        if drill is None or self.ccr is None:
            return False
        task, rest = drill
        spec = parse_spec(task.name, task.operation.params)
        point = " or ".join(x for x in (f"{spec.after_docs:,} documents" if spec.after_docs else "",
                                         f"{spec.after_seconds:g} s" if spec.after_seconds else "") if x)
        if self.console is not None:
            self.console.print(f"Failover drill {task.name} ({spec.mode}): indexing until {point}, then the cut",
                               highlight=False)
        figures = await drive_failover(spec, rest, run, targets=self.ccr.targets,
                                       engines=self.ccr.engines, kill=race.kill_cluster)
        self.failovers.append(figures)
        if self.console is not None:
            self.console.print(f"Failover drill {task.name}: " + (f"FAILED: {figures.error}" if figures.error else
                               f"RTO {figures.rto_s:.2f} s, RPO {figures.rpo_ops} ops"), highlight=False, markup=False)
        return True

    def finish(self, race: RaceTargets, summary: Summary | None) -> Summary | None:
        if self.ccr is None:
            return summary
        counts = asyncio.run(self.ccr.doc_counts())
        if summary is None:
            return None
        section = build_section(self.ccr.plan, summary, counts)
        out = summary.with_section(SECTION, section.model_dump(mode="json"), section.notes)
        out = out.model_copy(update={"unmeasured": [*out.unmeasured, *section.unmeasured]})
        return self._with_drills(out)

    def _with_drills(self, summary: Summary) -> Summary:
        samples = self.schedule.store.samples(self.schedule.trial_id) if self.schedule is not None else None
        drills = DrillsSection(bootstrap=bootstraps_of(samples) if samples is not None else [],
                               failover=self.failovers)
        if not drills.bootstrap and not drills.failover:
            return summary
        out = summary.with_section(DRILLS_SECTION, drills.model_dump(mode="json"), notes(drills))
        # A follower promoted by a drill stops replicating on purpose: a lag unknown in all of its samples (the cut
        # came before a sample saw checkpoints) is the drill's doing, the RPO says what it lacked.
        promoted = tuple(f"CCR: the lag of follower {f.cluster}/{f.index} is unknown" for f in drills.failover
                         if not f.error)
        kept = [u for u in out.unmeasured if not (promoted and u.startswith(promoted))]
        return out.model_copy(update={"unmeasured": [*kept, *unmeasured(drills)]})
