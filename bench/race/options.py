"""The options of ``bench race``, validated once at the CLI boundary."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from bench.provision.cpus import parse_cpu_list
from bench.provision.pinning import PINNING_PATTERN
from bench.results.threshold_spec import ThresholdSpec, specs_of
from bench.track.model import QueryRandomization
from bench.util.errors import ConfigError

ReportFormat = Literal["table", "markdown", "csv", "json", "junit"]
Pipeline = Literal["benchmark-only", "from-distribution"]
# Rally's --on-error: abort stops at the first failed request. bench's continue goes on after connection errors too
# (a node that dies stops the race through the health check), so Rally's continue-on-network is the same here.
OnError = Literal["continue", "continue-on-network", "abort"]


class RaceOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    track: str | None = None
    track_path: Path | None = None
    # Rally's track repositories (bench/track/repository.py): the repository's name, a branch, tag or commit.
    track_repository: str | None = None
    track_revision: str | None = None
    # tracks: --track names a Rally track (repository); workloads: --workload names an OSB workload (its repository)
    repository_kind: Literal["tracks", "workloads"] = "tracks"
    # Rally's task filters: names, type:OPERATION-TYPE, tag:TAG (bench/track/task_filter.py).
    include_tasks: list[str] = Field(default_factory=list)
    exclude_tasks: list[str] = Field(default_factory=list)
    race_id: str | None = Field(default=None, pattern=r"^[0-9a-fA-F-]{8,64}$")  # Rally's --race-id: the trial id
    # None: benchmark-only with --target-hosts, else from-distribution (Rally's --pipeline made explicit).
    pipeline: Pipeline | None = None
    track_params: dict[str, Any] = Field(default_factory=dict)
    ignore_unused_track_params: bool = False
    randomization: QueryRandomization | None = None  # OSB's --randomization-*: None = off
    challenge: str | None = None
    car: list[str] = Field(default_factory=lambda: ["defaults"])
    car_params: dict[str, Any] = Field(default_factory=dict)
    distribution_version: str = "8.19.21"
    distribution: str | None = None  # --distribution=ENGINE:VERSION (e.g. opensearch:2.19.1; bench/provision/overrides.py)
    plugins: list[str] = Field(default_factory=list)  # --plugin=[CLUSTER:]PATH, a plugin zip or folder
    # Official plugins by name[:version], downloaded and installed into every cluster of that engine bench starts
    # (Rally's --elasticsearch-plugins, OpenSearch Benchmark's --opensearch-plugins; bench/provision/plugin_names.py)
    elasticsearch_plugins: list[str] = Field(default_factory=list)
    opensearch_plugins: list[str] = Field(default_factory=list)
    distribution_repository: str | None = None  # release (default), maven-integ-test, a bench.ini name, a URL template
    runtime_jdk: str | None = Field(default=None, pattern=r"^(bundled|[1-9][0-9]?)$")  # Rally's --runtime-jdk
    distribution_path: Path | None = None
    nodes: int = Field(default=1, ge=1)
    http_port: int | None = Field(default=None, ge=1, le=65535)
    target_hosts: str | None = None
    client_options: dict[str, Any] = Field(default_factory=dict)
    test_mode: bool = False
    # Corpora: never download (--offline); look for local copies in this folder first (--corpus-dir, Rally's
    # local.dataset.cache: <dir>/<corpus>/<file> or <dir>/<file>).
    offline: bool = False
    corpus_dir: Path | None = None
    # --generate-corpora[=SEED]: every document set generated from its target's mapping with this seed, never
    # downloaded; stored with the trial as synthetic (bench/track/synthetic_corpora.py).
    generate_corpora: int | None = Field(default=None, ge=0)
    on_error: OnError = "continue"
    # --max-error-rate: a task whose share of failed measured requests is over this exits EXIT_ERROR_RATE
    # (bench.results.exit_status), as a k6 threshold does; None: failed requests are reported, never an exit code.
    max_error_rate: float | None = None
    # --threshold SCOPE:METRIC<LIMIT (repeatable; k6's thresholds): any that fails exits EXIT_THRESHOLD
    # (bench.results.thresholds); a track's and its challenge's own thresholds are added to these.
    thresholds: list[ThresholdSpec] = Field(default_factory=list)
    user_tags: dict[str, str] = Field(default_factory=dict)
    report_format: ReportFormat = "table"
    report_file: Path | None = None
    show_in_report: Literal["available", "all-percentiles", "all"] = "available"  # Rally's; all: the full table
    keep_cluster: bool = False
    # Load-driver workers: local processes (default 1), or with --load-driver=BACKEND:ADDRESS a registered
    # backend's (bench.driver.backends; e.g. ray:auto), whose default follows its cluster (Ray: one per CPU).
    worker_processes: int | None = Field(default=None, ge=1, le=1024)
    load_driver: str | None = None
    load_driver_hosts: list[str] = Field(default_factory=list)  # Rally's: the backend's machines to drive from
    # --topology: clusters (and, in a cloud, machines) from a topology file; see bench/cloud/.
    topology: Path | None = None
    yes: bool = False  # no confirmation before creating cloud machines
    max_instances: int = Field(default=8, ge=1)
    progress: bool = True
    # --live-html PATH: the live view also as a page in a browser, rewritten every second (bench/race/live_html.py)
    live_html: Path | None = None
    telemetry: list[str] = Field(default_factory=list)  # --telemetry devices (see bench/telemetry)
    telemetry_params: dict[str, Any] = Field(default_factory=dict)
    telemetry_profile: str | None = None
    # --pinning=auto[:N]: the clusters bench starts here and the load driver on disjoint CPU sets (N equal slots;
    # bench/provision/pinning.py); off: none; None: a topology's own pinning, else none.
    pinning: str | None = Field(default=None, pattern=PINNING_PATTERN)
    # --driver-cpus=LIST: the load driver's local workers on these CPUs and bench's own process off them (a Linux
    # CPU list, as taskset -c takes); kept as typed, checked against this machine when the race starts.
    driver_cpus: str | None = None
    enable_driver_profiling: bool = False  # Rally's flag: the load-driver workers sampled (bench/driver/profiling.py)
    # --redline=task:NAME,p99:500ms,...: the highest throughput NAME sustains within the objective (bench/redline)
    redline: str | None = None

    @field_validator("elasticsearch_plugins", "opensearch_plugins", mode="before")
    @classmethod
    def _comma_separated(cls, v: Any) -> Any:
        return [p.strip() for p in v.split(",")] if isinstance(v, str) else v

    @field_validator("include_tasks", "exclude_tasks", mode="before")
    @classmethod
    def _task_filters(cls, v: Any) -> Any:
        return [p.strip() for p in v.split(",") if p.strip()] if isinstance(v, str) else v

    @model_validator(mode="after")
    def _pipeline(self) -> "RaceOptions":
        if self.include_tasks and self.exclude_tasks:
            raise ConfigError("--include-tasks and --exclude-tasks exclude each other (as in Rally)")
        if self.pipeline is None:
            self.pipeline = "benchmark-only" if self.target_hosts else "from-distribution"
        elif self.pipeline == "from-distribution" and self.target_hosts:
            raise ConfigError("--pipeline=from-distribution starts a cluster: drop --target-hosts, or use "
                             "--pipeline=benchmark-only to benchmark those hosts")
        elif self.pipeline == "benchmark-only" and not self.target_hosts:
            if self.topology is not None:
                raise ConfigError("--pipeline=benchmark-only benchmarks existing hosts; --topology starts clusters")
            self.target_hosts = "127.0.0.1:9200"  # Rally's default for benchmark-only
        return self

    @field_validator("driver_cpus")
    @classmethod
    def _cpu_list(cls, v: str | None) -> str | None:
        if v is not None:
            try:
                parse_cpu_list(v)
            except ValueError as e:
                raise ConfigError(f"--driver-cpus={v}: {e}") from None
        return v

    @field_validator("max_error_rate", mode="before")
    @classmethod
    def _rate(cls, v: Any) -> Any:
        from bench.results.exit_status import parse_error_rate

        return parse_error_rate(v) if isinstance(v, str | int | float) and not isinstance(v, bool) else v

    @field_validator("thresholds", mode="before")
    @classmethod
    def _thresholds(cls, v: Any) -> Any:
        return specs_of(v, "--threshold")

    def trial_id(self) -> str:
        """--race-id (Rally's; a UUID, stored without its dashes as bench's ids are hex) or a new id."""
        from bench.trials.sqlite import new_trial_id  # here: the store module loads pandas, options load at start

        return new_trial_id() if self.race_id is None else self.race_id.replace("-", "").lower()
