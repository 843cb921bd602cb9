"""Pydantic models of a rendered Rally track (track.json after Jinja2).

Field names follow Rally's JSON keys (hyphenated); Python attributes use underscores. Unknown keys
on operations are operation parameters (e.g. ``bulk-size``) and are kept in ``Operation.params``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from bench.track.arrival import ArrivalRate


def _hyphen(name: str) -> str:
    return name.replace("_", "-")


class _RallyModel(BaseModel):
    model_config = ConfigDict(alias_generator=_hyphen, populate_by_name=True, extra="ignore", frozen=False)


class IndexSpec(_RallyModel):
    name: str = Field(min_length=1)  # Elasticsearch and OpenSearch refuse an empty index name
    body: str | None = None  # path relative to the track folder
    # The parsed JSON of ``body`` (settings/mappings), filled by the loader.
    body_content: dict[str, Any] | None = Field(default=None, exclude=True)


class TemplateSpec(_RallyModel):
    name: str
    index_pattern: str | None = None
    template: str  # path relative to the track folder
    # Rally: where in the file the template body sits (dotted keys), e.g. "index_template"
    template_path: str | None = None
    delete_matching_indices: bool = True
    template_content: dict[str, Any] | None = Field(default=None, exclude=True)

    @model_validator(mode="after")
    def _body_at_template_path(self) -> "TemplateSpec":
        if self.template_path and self.template_content is not None:
            body: Any = self.template_content
            for key in self.template_path.split("."):
                if not isinstance(body, dict) or key not in body:
                    raise ValueError(f"template '{self.name}': {self.template} has no '{self.template_path}' "
                                     f"(its template-path)")
                body = body[key]
            self.template_content = body
            self.template_path = None  # applied: validating again must not descend twice
        return self


class DataStreamSpec(_RallyModel):
    name: str


class GeneratorSpec(_RallyModel):
    """bench extension: documents produced by a seeded generator instead of a download."""

    name: str  # e.g. "nginx", "http_logs"
    seed: int = 1
    params: dict[str, Any] = Field(default_factory=dict)


class SyntheticSpec(BaseModel):
    """bench: documents generated from the mapping of the set's target (``--generate-corpora``), not the track's
    published file (``bench.track.synthetic_corpora``)."""

    seed: int  # the race's seed
    document_seed: int  # this document set's, derived from the race's
    mappings: dict[str, Any]
    mapping_of: str  # where the mapping came from: index body, templates
    target: str
    action: dict[str, Any] | None = None  # the action line before each document (includes-action-and-meta-data)
    data_stream: bool = False
    average_bytes: float | None = None  # the published documents' mean size, when the track declares it
    presence: float = 1.0  # set when generated: the probability of each field being in a document


class DocumentsSpec(_RallyModel):
    source_file: str
    base_url: str | None = None
    source_format: Literal["bulk"] = "bulk"
    document_count: int = Field(ge=0)
    compressed_bytes: int | None = None
    uncompressed_bytes: int | None = None
    includes_action_and_meta_data: bool = False
    target_index: str | None = None
    target_data_stream: str | None = None
    target_type: str | None = None
    generator: GeneratorSpec | None = None
    synthetic: SyntheticSpec | None = Field(default=None, exclude=True)
    # Absolute path of the uncompressed, ready-to-read file; set when the corpus is prepared.
    local_path: Path | None = Field(default=None, exclude=True)
    # The published documents' mean size (uncompressed-bytes / document-count), kept when test mode drops the sizes.
    average_bytes: float | None = Field(default=None, exclude=True)

    @model_validator(mode="after")
    def _average(self) -> "DocumentsSpec":
        if self.average_bytes is None and self.uncompressed_bytes and self.document_count:
            self.average_bytes = self.uncompressed_bytes / self.document_count
        return self

    @field_validator("source_format", mode="before")
    @classmethod
    def _bulk_only(cls, v: Any) -> Any:
        if v in ("hdf5", "bigann"):  # OpenSearch Benchmark's vector data set corpora
            raise ValueError(f"source-format {v!r} is a vector data set, which bench reads from a file only: give "
                             f"the operations its path in data_set_path instead of a corpus")
        return v


# The document properties a corpus may set for all its document sets (Rally's loader, _create_corpora).
# Documents per document set in test mode (Rally's --test-mode): bench.track.testmode and corpus preparation.
TEST_MODE_DOCS = 1000

CORPUS_DOCUMENT_DEFAULTS = ("base-url", "source-format", "includes-action-and-meta-data", "target-index",
                            "target-data-stream", "target-type")


class CorpusSpec(_RallyModel):
    name: str
    base_url: str | None = None
    meta: dict[str, Any] = Field(default_factory=dict)
    documents: list[DocumentsSpec]

    @model_validator(mode="before")
    @classmethod
    def _inherit_document_defaults(cls, data: Any) -> Any:
        """Rally: every document property set on the corpus is each document set's default (a document set's own
        value wins). Losing one is a wrong number (with ``includes-action-and-meta-data`` the action lines would be
        indexed as documents) or failed bulks (``target-index``)."""
        if not isinstance(data, dict) or not isinstance(data.get("documents"), list):
            return data
        defaults = {k.replace("_", "-"): v for k, v in data.items() if k.replace("_", "-") in CORPUS_DOCUMENT_DEFAULTS}
        if not defaults:
            return data
        docs = []
        for d in data["documents"]:
            if isinstance(d, dict):
                given = {k.replace("_", "-") for k in d}
                d = {**{k: v for k, v in defaults.items() if k.replace("_", "-") not in given}, **d}
            docs.append(d)
        return {**data, "documents": docs}


class Operation(_RallyModel):
    """An operation: its type and every other key as a parameter (Rally semantics)."""

    model_config = ConfigDict(alias_generator=_hyphen, populate_by_name=True, extra="allow")
    name: str
    operation_type: str
    params: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _collect_params(cls, data: Any) -> Any:
        if isinstance(data, dict) and "params" not in data:
            known = {"name", "operation-type", "operation_type"}
            data = {
                "name": data.get("name"),
                "operation-type": data.get("operation-type", data.get("operation_type")),
                "params": {k: v for k, v in data.items() if k not in known},
            }
        return data


class Task(_RallyModel):
    name: str
    operation: Operation
    clients: int = Field(default=1, ge=1)
    warmup_time_period: float | None = Field(default=None, ge=0)
    # Rally: clients start one after another over this period (client i after i/clients of it), so
    # thousands of clients do not all send their first request in the same instant. Within warmup.
    ramp_up_time_period: float | None = Field(default=None, ge=0)
    time_period: float | None = Field(default=None, gt=0)
    # OpenSearch Benchmark: after the time period, clients stop one after another over this period, client i
    # (0-based) of n at (i + 1) / n of it, so the last one runs the whole of it. Its requests are measured, as in OSB.
    ramp_down_time_period: float | None = Field(default=None, ge=0)
    warmup_iterations: int | None = Field(default=None, ge=0)
    iterations: int | None = Field(default=None, ge=1)
    # In ``throughput_unit`` (Rally's "10 docs/s"): ops/s paces requests, any other unit paces the runner's
    # work (e.g. documents of a bulk), see bench.driver.schedule.Pacer.
    target_throughput: float | None = Field(default=None, gt=0)
    throughput_unit: str = "ops/s"
    target_interval: float | None = Field(default=None, gt=0)
    # deterministic, poisson, or a scheduler the track's track.py registers (checked when the track loads);
    # constant-arrival-rate or ramping-arrival-rate: an open model, its parameters in ``arrival``
    schedule: str | None = None
    arrival: ArrivalRate | None = None
    ignore_response_error_level: Literal["non-fatal"] | None = None
    tags: list[str] = Field(default_factory=list)
    meta: dict[str, Any] = Field(default_factory=dict)
    # Rally: false = the task runs and its samples are stored, but it is left out of the summary.
    include_in_reporting: bool = True
    # Why bench cannot run this task (unknown operation type, missing parameter ...): set by the loader for
    # tasks of challenges that were not selected; a selected challenge with such a task never loads.
    problem: str | None = Field(default=None, exclude=True)

    @field_validator("tags", mode="before")
    @classmethod
    def _one_tag(cls, v: Any) -> Any:
        return [v] if isinstance(v, str) else ([] if v is None else v)

    @field_validator("meta", mode="before")
    @classmethod
    def _no_meta(cls, v: Any) -> Any:
        return {} if v is None else v

    @model_validator(mode="after")
    def _ramp_up_within_warmup(self) -> "Task":
        if self.ramp_up_time_period:
            if self.warmup_time_period is None or self.warmup_time_period < self.ramp_up_time_period:
                raise ValueError(f"task '{self.name}': ramp-up-time-period ({self.ramp_up_time_period:g} s) needs a "
                                 "warmup-time-period at least as long, so no client starts while measuring")
        return self

    @model_validator(mode="after")
    def _ramp_down_after_time_period(self) -> "Task":
        # OSB's loader rules (osbenchmark/workload/loader.py parse_task), word for word in substance.
        if self.ramp_down_time_period is not None:
            if self.iterations is not None or self.warmup_iterations is not None:
                raise ValueError(f"task '{self.name}': ramp-down-time-period cannot be mixed with iterations: use "
                                 "time-period (and warmup-time-period)")
            if self.time_period is None:
                raise ValueError(f"task '{self.name}': ramp-down-time-period "
                                 f"({self.ramp_down_time_period:g} s) needs a time-period")
            if self.time_period < self.ramp_down_time_period:
                raise ValueError(f"task '{self.name}': time-period ({self.time_period:g} s) must be at least the "
                                 f"ramp-down-time-period ({self.ramp_down_time_period:g} s)")
        return self

    @model_validator(mode="after")
    def _open_model_is_not_paced_as_closed(self) -> "Task":
        # Whatever builds the task (the loader, a redline step, an extension): a closed-loop target beside an
        # arrival rate would be silently ignored by the worker's dispatcher.
        if self.arrival is not None:
            given = [k for k, v in (("target-throughput", self.target_throughput),
                                    ("target-interval", self.target_interval), ("iterations", self.iterations),
                                    ("ramp-up-time-period", self.ramp_up_time_period)) if v is not None]
            if given or self.schedule != self.arrival.kind:
                raise ValueError(f"task '{self.name}': schedule '{self.arrival.kind}' cannot run with "
                                 f"{', '.join(given) or f'schedule {self.schedule!r}'}")
        return self

    def stop_delay(self, client_index: int) -> float:
        """Seconds after the time period at which client ``client_index`` (0-based) stops (OSB's ramp-down)."""
        return (self.ramp_down_time_period or 0.0) * (client_index + 1) / self.clients

    def start_delay(self, client_index: int) -> float:
        """Seconds after the task's start at which client ``client_index`` (0-based) starts (ramp-up)."""
        return (self.ramp_up_time_period or 0.0) * client_index / self.clients

    @property
    def throttled(self) -> bool:
        return self.target_throughput is not None or self.target_interval is not None

    @property
    def ops_per_second(self) -> float | None:
        """Target rate across all clients of the task in ``throughput_unit`` (None = as fast as possible)."""
        if self.target_interval is not None:
            return 1.0 / self.target_interval
        return self.target_throughput


class Parallel(_RallyModel):
    tasks: list[Task]
    completed_by: str | None = None

    @model_validator(mode="after")
    def _completed_by_names_a_task(self) -> "Parallel":
        names = [t.name for t in self.tasks]
        if len(set(names)) != len(names):
            raise ValueError(f"task names inside a parallel block must be unique, got {names}")
        if self.completed_by not in (None, "any") and self.completed_by not in names:
            raise ValueError(f"completed-by '{self.completed_by}' names no task of the parallel block {names}")
        return self


Step = Task | Parallel


class Challenge(_RallyModel):
    name: str
    description: str = ""
    default: bool = False
    # Rally's challenge-level settings: merged into created indices / applied to the cluster.
    index_settings: dict[str, Any] = Field(default_factory=dict)
    cluster_settings: dict[str, Any] = Field(default_factory=dict)
    # Rally's challenge "parameters", merged over the track's "parameters" (track code reads them, e.g.
    # ``track.selected_challenge_or_default.parameters``; track processors may change them).
    parameters: dict[str, Any] = Field(default_factory=dict)
    schedule: list[Step]
    # k6's thresholds map: task (or *, or an extension's scope) -> expressions (bench.results.threshold_spec).
    thresholds: Any = Field(default_factory=dict)
    # Why bench cannot run the challenge as a whole (a challenge-level construct it would not apply), set by the
    # loader; the tasks' own problems come after it.
    problem: str | None = Field(default=None, exclude=True)

    def tasks(self) -> list[Task]:
        out: list[Task] = []
        for s in self.schedule:
            out.extend(s.tasks if isinstance(s, Parallel) else [s])
        return out

    def problems(self) -> list[str]:
        """Why bench cannot run each task it cannot run (empty: the challenge is runnable)."""
        return ([self.problem] if self.problem else []) + [t.problem for t in self.tasks() if t.problem]


class QueryRandomization(BaseModel):
    """OpenSearch Benchmark's query randomization settings (``--randomization-*``, OSB's defaults)."""

    repeat_frequency: float = Field(default=0.3, ge=0, le=1)
    n: int = Field(default=5000, ge=1)
    alpha: float = Field(default=1.0, gt=0)


class Track(_RallyModel):
    name: str
    description: str = ""
    root: Path = Field(exclude=True)
    indices: list[IndexSpec] = Field(default_factory=list)
    templates: list[TemplateSpec] = Field(default_factory=list)
    composable_templates: list[TemplateSpec] = Field(default_factory=list)
    component_templates: list[TemplateSpec] = Field(default_factory=list)
    data_streams: list[DataStreamSpec] = Field(default_factory=list)
    corpora: list[CorpusSpec] = Field(default_factory=list)
    challenges: list[Challenge]
    # Track parameters actually applied (defaults of the track are not listed).
    params: dict[str, Any] = Field(default_factory=dict)
    # Rally's track-level "dependencies": pip requirements the track's code needs.
    dependencies: list[str] = Field(default_factory=list)
    # Template variables the track printed without a value: rendered as '' (Rally's Jinja), named in a warning.
    undefined_params: list[str] = Field(default_factory=list)
    # k6's thresholds map for every challenge of the track (a challenge's own are added to them).
    thresholds: Any = Field(default_factory=dict)
    # rally: a track (track.json); osb: an OpenSearch Benchmark workload (workload.json, test procedures).
    format: Literal["rally", "osb"] = "rally"
    # Set by the race from --randomization-enabled: its search tasks randomize their range queries.
    randomization: QueryRandomization | None = Field(default=None, exclude=True)

    @property
    def words(self) -> tuple[str, str, str]:
        """What this format's users call the track, a challenge, and the flag that selects one."""
        return ("workload", "test procedure", "--test-procedure") if self.format == "osb" else \
            ("track", "challenge", "--challenge")

    def challenge(self, name: str | None) -> Challenge:
        """The named challenge, or the default one, checked to be runnable: a task bench cannot run is a
        TrackError naming the file, challenge, task and construct."""
        from bench.util.errors import TrackError

        c = self.find_challenge(name)
        problems = c.problems()
        if problems:
            more = f" (and {len(problems) - 1} more task(s) bench cannot run; see 'bench info')" \
                if len(problems) > 1 else ""
            raise TrackError(problems[0] + more)
        return c

    def find_challenge(self, name: str | None) -> Challenge:
        """The named challenge, or the default one (the only one, or the one marked default), runnable or not."""
        from bench.util.errors import TrackError

        if name is None:
            defaults = [c for c in self.challenges if c.default]
            if len(self.challenges) == 1:
                return self.challenges[0]
            if len(defaults) == 1:
                return defaults[0]
            raise TrackError(f"{self.words[0]} '{self.name}' has several {self.words[1]}s and none is default: "
                             f"pass {self.words[2]} (one of {', '.join(c.name for c in self.challenges)})")
        for c in self.challenges:
            if c.name == name:
                return c
        raise TrackError(f"unknown {self.words[1]} '{name}' in {self.words[0]} '{self.name}': "
                         f"choose one of {', '.join(c.name for c in self.challenges)}")

    def corpus(self, name: str) -> CorpusSpec:
        from bench.util.errors import TrackError

        for c in self.corpora:
            if c.name == name:
                return c
        raise TrackError(f"unknown corpus '{name}' in track '{self.name}'")
