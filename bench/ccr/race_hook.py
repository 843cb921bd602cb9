"""CCR's steps in a race: refuse soft-deletes-off where it cannot work before a cluster starts, wire remote
clusters, licenses and the ccr-stats device before the schedule, count documents and add the CCR section of
the summary after it (while the clusters still run)."""

from __future__ import annotations

import asyncio

from bench.ccr.prepare import CcrRace, check_soft_deletes, prepare_ccr_race
from bench.ccr.section import SECTION, build_section
from bench.race.options import RaceOptions
from bench.race.pipeline import RaceHook, RacePlan, RaceTargets
from bench.results.summary import Summary


class CcrHook(RaceHook):
    def __init__(self) -> None:
        self.ccr: CcrRace | None = None

    def before_provisioning(self, race: RacePlan) -> None:
        # Known before provisioning: do not start a cluster only to refuse its car afterwards.
        for c in race.clusters:
            if c.car.variables.get("index_soft_deletes") is False and c.version is not None:
                check_soft_deletes(c.name, c.engine, c.version, c.car.names, None)

    def prepare(self, race: RaceTargets) -> RaceOptions:
        opts, self.ccr = prepare_ccr_race(race.opts, race.cars, race.track, race.challenge, race.targets,
                                          race.console)
        return opts

    def finish(self, race: RaceTargets, summary: Summary | None) -> Summary | None:
        if self.ccr is None:
            return summary
        counts = asyncio.run(self.ccr.doc_counts())
        if summary is None:
            return None
        section = build_section(self.ccr.plan, summary, counts)
        out = summary.with_section(SECTION, section.model_dump(mode="json"), section.notes)
        return out.model_copy(update={"unmeasured": [*out.unmeasured, *section.unmeasured]})
