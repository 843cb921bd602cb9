"""What compare works on: a trial (info + summary) and a side (one trial or a group of one configuration)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from bench.results.summary import Summary
from bench.trials.model import TrialInfo


class TrialData(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)

    info: TrialInfo
    summary: Summary | None = None


class Side(BaseModel):
    label: str
    selector: str  # what the user asked for (an id, a prefix, tag:k=v)
    trials: list[TrialData]

    @property
    def ids(self) -> list[str]:
        return [t.info.id for t in self.trials]
