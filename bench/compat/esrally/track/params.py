"""``esrally.track.params``: the ``ParamSource`` base class and the corpus-reading helpers track code builds on.

Track code often does ``from esrally.track.params import *`` and then uses ``exceptions``, ``io``, ``bounds``,
``Slice`` and ``chain`` as Rally's module provides them, so they are module-level names here too.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from enum import Enum
from typing import Any

from bench.compat.esrally import exceptions
from bench.compat.esrally.utils import io

__all__ = ["CreateComponentTemplateParamSource", "CreateComposableTemplateParamSource", "CreateIndexTemplateParamSource",
           "CreateTemplateParamSource", "IndexIdConflict", "ParamSource", "Slice", "bounds", "chain", "exceptions", "io", "logging"]


class IndexIdConflict(Enum):
    """Which id conflicts a bulk simulates (Rally's enum; track code compares against its members)."""

    NoConflicts = 0
    SequentialConflicts = 1
    RandomConflicts = 2


class ParamSource:
    """Rally's parameter-source base: one per operation, ``partition`` per client, ``params()`` per request."""

    def __init__(self, track: Any, params: dict[str, Any], **kwargs: Any) -> None:
        self.track = track
        self._params = params
        self.kwargs = kwargs

    def partition(self, partition_index: int, total_partitions: int) -> ParamSource:
        return self

    @property
    def infinite(self) -> bool:
        # Rally's backwards-compatible reading: a source without a size runs until the task's schedule ends.
        return self.size() is None

    def size(self) -> int | None:
        return None

    def params(self) -> dict[str, Any]:
        return self._params


def _merge(into: dict[str, Any], extra: Mapping[str, Any]) -> None:
    for k, v in extra.items():
        if isinstance(into.get(k), dict) and isinstance(v, Mapping):
            _merge(into[k], v)
        else:
            into[k] = v


class CreateTemplateParamSource(ParamSource):
    """Rally's source of the create-*-template operations: ``template`` + ``body``, or the track's declared
    templates (only ``template`` if given) with ``settings`` merged in. ``template_definitions`` is the list of
    (name, body) subclasses edit; ``params()`` hands it to the runner as ``templates``."""

    settings_path: tuple[str, ...] = ("template", "settings")

    def __init__(self, track: Any, params: dict[str, Any], templates: list[Any], **kwargs: Any) -> None:
        super().__init__(track, params, **kwargs)
        self.request_params = params.get("request-params", {})
        self.template_definitions: list[tuple[str, dict[str, Any]]] = []
        if "template" in params and "body" in params:
            self.template_definitions.append((params["template"], params["body"]))
        elif templates:
            wanted = params.get("template")
            for t in templates:
                if not wanted or t.name == wanted:
                    body = t.content
                    if params.get("settings"):
                        node = body
                        for key in self.settings_path:
                            node = node.setdefault(key, {})
                        _merge(node, params["settings"])
                    self.template_definitions.append((t.name, body))
            if wanted and not self.template_definitions:
                raise exceptions.InvalidSyntax(f"Unknown template: {wanted}. Available templates: "
                                               f"{', '.join(t.name for t in templates)}.")
        else:
            raise exceptions.InvalidSyntax(f"Please set the properties 'template' and 'body' for the "
                                           f"{params.get('operation-type')} operation or declare composable and/or "
                                           f"component templates in the track")

    def params(self) -> dict[str, Any]:
        return {"templates": self.template_definitions, "request-params": self.request_params}


class CreateComposableTemplateParamSource(CreateTemplateParamSource):
    def __init__(self, track: Any, params: dict[str, Any], **kwargs: Any) -> None:
        super().__init__(track, params, track.composable_templates, **kwargs)


class CreateComponentTemplateParamSource(CreateTemplateParamSource):
    def __init__(self, track: Any, params: dict[str, Any], **kwargs: Any) -> None:
        super().__init__(track, params, track.component_templates, **kwargs)


class CreateIndexTemplateParamSource(CreateTemplateParamSource):
    settings_path = ("settings",)

    def __init__(self, track: Any, params: dict[str, Any], **kwargs: Any) -> None:
        super().__init__(track, params, track.templates, **kwargs)


def chain(*iterables: Any) -> Iterator[Any]:
    """``itertools.chain`` over context managers: each iterable is entered while it is read."""
    for it in iterables:
        if it is None:
            continue
        with it:
            yield from it


def bounds(total_docs: int, start_client_index: int, end_client_index: int, num_clients: int,
           includes_action_and_meta_data: bool) -> tuple[int, int, int]:
    """(first line, documents, lines) of the clients ``start..end`` of ``num_clients`` sharing a corpus file:
    the documents are split evenly, rounding each client's boundary, as Rally splits them."""
    lines_per_doc = 2 if includes_action_and_meta_data else 1
    per_client = total_docs / num_clients
    first_doc = round(per_client * start_client_index)
    end_doc = round(per_client * (end_client_index + 1))
    docs = end_doc - first_doc
    return first_doc * lines_per_doc, docs, docs * lines_per_doc


class Slice:
    """A window of ``number_of_lines`` lines from line ``offset`` of a file, read ``bulk_size`` lines at a time."""

    def __init__(self, source_class: type[io.MmapSource], offset: int, number_of_lines: int) -> None:
        self.source_class = source_class
        self.source: io.MmapSource | None = None
        self.offset = offset
        self.number_of_lines = number_of_lines
        self.current_line = 0
        self.bulk_size = 0

    def open(self, file_name: str, mode: str, bulk_size: int) -> Slice:
        self.bulk_size = bulk_size
        self.source = self.source_class(file_name, mode).open()
        io.skip_lines(file_name, self.source, self.offset)
        return self

    def close(self) -> None:
        if self.source is not None:
            self.source.close()
            self.source = None

    def __iter__(self) -> Iterator[list[bytes]]:
        return self

    def __next__(self) -> list[bytes]:
        if self.current_line >= self.number_of_lines or self.source is None:
            raise StopIteration
        lines = list(self.source.readlines(min(self.bulk_size, self.number_of_lines - self.current_line)))
        if not lines:
            raise StopIteration
        self.current_line += len(lines)
        return lines

    def __str__(self) -> str:
        return f"{self.source}[{self.offset};{self.offset + self.number_of_lines}]"


