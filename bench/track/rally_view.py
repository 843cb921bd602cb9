"""The track as a track's own Python code sees it: Rally's track objects (``track.indices[0].name``,
``track.corpora[0].documents``, ``track.selected_challenge_or_default`` ...), built from bench's validated model.

Parameter sources, schedulers and track processors of a ``track.py`` receive these objects where Rally passes its
``Track``, ``Challenge`` and ``Task``; indices, data streams and templates are instances of the classes track code
imports from ``esrally.track``. They are plain objects on purpose: a track's code may keep them, read any
attribute it knows from Rally, and bench's own model stays private to bench.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.compat.esrally.track import track as rally_track
from bench.track.formats import format_at
from bench.track.model import Challenge, CorpusSpec, DocumentsSpec, IndexSpec, Parallel, Task, TemplateSpec, Track


class _Named:
    name: str

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"

    def matches(self, pattern: str | None) -> bool:
        return pattern in (None, "_all", "*") or self.name == pattern


class RallyIndex(_Named, rally_track.Index):
    def __init__(self, spec: IndexSpec) -> None:
        self.name = spec.name
        self.body = copy.deepcopy(spec.body_content or {})
        self.types: list[Any] = []


class RallyDataStream(_Named, rally_track.DataStream):
    def __init__(self, name: str) -> None:
        self.name = name


class RallyTemplate(_Named, rally_track.IndexTemplate):
    def __init__(self, spec: TemplateSpec) -> None:
        self.name = spec.name
        self.pattern = spec.index_pattern
        self.content = copy.deepcopy(spec.template_content or {})
        self.delete_matching_indices = spec.delete_matching_indices


class RallyDocuments(rally_track.Documents):
    def __init__(self, spec: DocumentsSpec) -> None:
        self.source_format = spec.source_format
        archive = spec.source_file
        self.document_archive = archive
        self.document_file = str(spec.local_path) if spec.local_path else _uncompressed_name(archive)
        self.base_url = spec.base_url
        self.includes_action_and_meta_data = spec.includes_action_and_meta_data
        self.number_of_documents = spec.document_count
        self.compressed_size_in_bytes = spec.compressed_bytes
        self.uncompressed_size_in_bytes = spec.uncompressed_bytes
        self.target_index = spec.target_index
        self.target_data_stream = spec.target_data_stream
        self.target_type = spec.target_type
        self.meta_data: dict[str, Any] = {}

    def has_compressed_corpus(self) -> bool:
        return self.document_archive is not None and self.document_archive != self.document_file


def _uncompressed_name(name: str) -> str:
    for ext in (".bz2", ".gz", ".zst", ".zip", ".tar"):
        if name.endswith(ext):
            return name[: -len(ext)]
    return name


class RallyCorpus(_Named, rally_track.DocumentCorpus):
    def __init__(self, spec: CorpusSpec) -> None:
        self.name = spec.name
        self.documents = [RallyDocuments(d) for d in spec.documents]
        self.meta_data = dict(spec.meta)


class RallyOperation(_Named):
    def __init__(self, task: Task) -> None:
        op = task.operation
        self.name = op.name
        self.type = op.operation_type
        # Rally hands track code the operation's whole specification, name and type included.
        self.params = {"name": op.name, "operation-type": op.operation_type, **copy.deepcopy(op.params)}
        self.param_source = op.params.get("param-source")
        self.meta_data = op.params.get("meta")


class RallyTask(_Named):
    def __init__(self, task: Task) -> None:
        self.name = task.name
        self.operation = RallyOperation(task)
        self.clients = task.clients
        self.warmup_iterations = task.warmup_iterations
        self.iterations = task.iterations
        self.warmup_time_period = task.warmup_time_period
        self.time_period = task.time_period
        self.ramp_up_time_period = task.ramp_up_time_period
        self.ramp_down_time_period = task.ramp_down_time_period
        self.target_throughput = task.target_throughput
        self.target_interval = task.target_interval
        self.schedule = task.schedule
        self.tags = list(task.tags)
        self.meta_data = dict(task.meta)
        # Rally's task.params: the task's own keys (schedulers read their settings there) over the operation's.
        self.params: dict[str, Any] = {**self.operation.params, **_task_keys(task)}

    def __iter__(self) -> Iterator["RallyTask"]:  # Rally iterates a schedule's elements; a task is its only one
        return iter([self])


def _task_keys(task: Task) -> dict[str, Any]:
    keys = task.model_dump(by_alias=True, exclude={"operation", "name"}, exclude_none=True)
    return {k: v for k, v in keys.items() if v not in ([], {})}


class RallyParallel:
    def __init__(self, step: Parallel) -> None:
        self.tasks = [RallyTask(t) for t in step.tasks]

    def __iter__(self) -> Iterator[RallyTask]:
        return iter(self.tasks)


class RallyChallenge(_Named):
    def __init__(self, challenge: Challenge) -> None:
        self.name = challenge.name
        self.description = challenge.description
        self.default = challenge.default
        self.meta_data: dict[str, Any] = {}
        self.parameters: dict[str, Any] = copy.deepcopy(challenge.parameters)
        self.schedule = [RallyParallel(s) if isinstance(s, Parallel) else RallyTask(s) for s in challenge.schedule]


class RallyTrack(_Named):
    """Rally's ``Track``: what a track's Python code reads."""

    def __init__(self, track: Track, selected_challenge: str | None = None) -> None:
        self.name = track.name
        self.description = track.description
        self.meta_data: dict[str, Any] = {}
        self.root = str(track.root)
        self.indices = [RallyIndex(i) for i in track.indices]
        self.data_streams = [RallyDataStream(getattr(d, "name", str(d))) for d in getattr(track, "data_streams", [])]
        self.templates = [RallyTemplate(t) for t in track.templates]
        self.composable_templates = [RallyTemplate(t) for t in track.composable_templates]
        self.component_templates = [RallyTemplate(t) for t in getattr(track, "component_templates", [])]
        self.corpora = [RallyCorpus(c) for c in track.corpora]
        self.challenges = [RallyChallenge(c) for c in track.challenges]
        self.dependencies: list[str] = []
        self.has_plugins = (Path(track.root) / format_at(Path(track.root)).code_file).is_file()
        self._selected = selected_challenge

    @property
    def default_challenge(self) -> RallyChallenge | None:
        return next((c for c in self.challenges if c.default), self.challenges[0] if len(self.challenges) == 1
                    else None)

    @property
    def selected_challenge(self) -> RallyChallenge | None:
        return next((c for c in self.challenges if c.name == self._selected), None)

    @property
    def selected_challenge_or_default(self) -> RallyChallenge | None:
        return self.selected_challenge or self.default_challenge

    def find_challenge_or_default(self, name: str | None) -> RallyChallenge | None:
        return next((c for c in self.challenges if c.name == name), None) or self.default_challenge

    def find_challenge(self, name: str) -> RallyChallenge:
        found = next((c for c in self.challenges if c.name == name), None)
        if found is None:
            raise KeyError(f"unknown challenge '{name}' in track '{self.name}'")
        return found

    # OSB's names for the same (a workload's code reads test procedures)

    @property
    def test_procedures(self) -> list[RallyChallenge]:
        return self.challenges

    @property
    def default_test_procedure(self) -> RallyChallenge | None:
        return self.default_challenge

    @property
    def selected_test_procedure(self) -> RallyChallenge | None:
        return self.selected_challenge

    @property
    def selected_test_procedure_or_default(self) -> RallyChallenge | None:
        return self.selected_challenge_or_default

    def find_test_procedure_or_default(self, name: str | None) -> RallyChallenge | None:
        return self.find_challenge_or_default(name)

    @property
    def number_of_documents(self) -> int:
        return sum(c.number_of_documents("bulk") for c in self.corpora)

    def index_names(self) -> list[str]:
        return [i.name for i in self.indices]

    def data_stream_names(self) -> list[str]:
        return [d.name for d in self.data_streams]
