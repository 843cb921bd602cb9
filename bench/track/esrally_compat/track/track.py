"""``esrally.track.track``: the track's building blocks as Rally's track code constructs them.

bench runs what a track's JSON declares; a processor that adds these objects to the track in
``on_after_load_track`` is refused at load time (``bench.track.plugins``), so they exist for code that builds or
compares them, not as a way around the track file.
"""

from __future__ import annotations

from typing import Any


class _Named:
    name: str

    def matches(self, pattern: str | None) -> bool:
        return pattern in (None, "_all", "*") or self.name == pattern

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return ", ".join(f"{k} = [{v!r}]" for k, v in vars(self).items())

    def __hash__(self) -> int:
        return hash(self.name)

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and vars(self) == vars(other)


class Index(_Named):
    def __init__(self, name: str, body: dict[str, Any] | None = None, types: list[Any] | None = None) -> None:
        self.name = name
        self.body = body if body is not None else {}
        self.types = types if types is not None else []


class DataStream(_Named):
    def __init__(self, name: str) -> None:
        self.name = name


class IndexTemplate(_Named):
    # pattern: None when the template's body names its index patterns itself (bench's TemplateSpec)
    def __init__(self, name: str, pattern: str | None, content: dict[str, Any],
                 delete_matching_indices: bool = False) -> None:
        self.name = name
        self.pattern = pattern
        self.content = content
        self.delete_matching_indices = delete_matching_indices


class ComponentTemplate(_Named):
    def __init__(self, name: str, content: dict[str, Any]) -> None:
        self.name = name
        self.content = content
