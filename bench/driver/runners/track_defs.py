"""What runners of admin operations read from the track itself: its templates and data streams.

Rally's create/delete template and data stream operations act on the track's declared ``templates``,
``composable-templates``, ``component-templates`` and ``data-streams`` when the operation names none itself.
The coordinator builds one ``TrackDefinitions`` per race and every worker's runners see it through their Context.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from bench.track.model import TemplateSpec, Track


@dataclass(frozen=True, slots=True)
class TemplateDef:
    name: str
    body: dict[str, Any]
    index_pattern: str | None = None
    delete_matching_indices: bool = True

    def fresh_body(self) -> dict[str, Any]:
        """A copy runners may merge settings into without changing the definition other clients use."""
        return copy.deepcopy(self.body)


@dataclass(frozen=True, slots=True)
class TrackDefinitions:
    indices: tuple[str, ...] = ()
    data_streams: tuple[str, ...] = ()
    templates: tuple[TemplateDef, ...] = ()
    composable_templates: tuple[TemplateDef, ...] = ()
    component_templates: tuple[TemplateDef, ...] = ()

    def default_target(self) -> str | None:
        """Rally's default target of searches: the track's only index, else its only data stream."""
        if len(self.indices) == 1:
            return self.indices[0]
        if len(self.data_streams) == 1:
            return self.data_streams[0]
        return None


def _defs(specs: list[TemplateSpec]) -> tuple[TemplateDef, ...]:
    return tuple(TemplateDef(s.name, dict(s.template_content or {}), s.index_pattern, s.delete_matching_indices)
                 for s in specs)


def track_definitions(track: Track) -> TrackDefinitions:
    return TrackDefinitions(
        indices=tuple(i.name for i in track.indices),
        data_streams=tuple(d.name for d in track.data_streams),
        templates=_defs(track.templates),
        composable_templates=_defs(track.composable_templates),
        component_templates=_defs(track.component_templates),
    )
