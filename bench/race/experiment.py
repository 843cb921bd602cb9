"""Experiments: a matrix of races (variants × tracks × repetitions) in a randomised or interleaved order,
each race a normal trial tagged with its experiment, run, variant, track and repetition, then one comparison
of every variant against the baseline (per track).

An experiment file (YAML)::

    name: ccr-overhead
    baseline: baseline            # a variant name (default: the first variant)
    repetitions: 3
    order: interleaved            # or "random" (seeded by the run id; reproducible on resume)
    tracks: [nginx]               # or [{track: nginx, challenge: index-only, track-params: {...}}]
    race:                         # options shared by every race (bench race's names, - or _)
      test-mode: false
      track-params: {doc_count: 200000}
    variants:
      baseline: {}
      soft-deletes: {car: [defaults, soft-deletes]}
      ccr: {challenge: ccr, topology: topologies/ccr-local.yml, plugin: /path/plugin.zip}
    study:                        # optional: the study table and --history's key rows (bench/reporting/study.py)
      indexing-task: {baseline: index-append, ccr: index-append-leader}
      clusters: {default: leader}
      soft-deletes-off: soft-deletes     # dropped where the engine refuses soft deletes off ...
      baseline-if-refused: baseline      # ... and this variant is the baseline then

Options take ``bench race``'s flag names (``plugin``, ``track-params``, ...; ``-`` or ``_``); a relative
``topology`` is found from here, else next to the experiment file or one folder up (where
``topologies/`` sits beside ``experiments/``, in the repository and in the installed package alike).

Resume: ``bench experiment FILE --resume`` continues the newest run of this experiment, skipping the races
that completed (the run id, order and tags are the same, so nothing is repeated). Failed races are run again
on resume. One process at a time runs a run: it holds the run's lock in the bench home, and a second resume of
it is refused with one line naming the holder (``run_held_error``).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import random
import re
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator, model_validator

from bench.race.adaptive import (
    AdaptiveRepetitions,
    adaptive_text,
    check_adaptive,
    main_row_spreads,
    percent_value,
    spent_seconds,
)
from bench.race.adaptive import decide as decide_rounds
from bench.race.options import RaceOptions
from bench.trials.model import TrialInfo, TrialReader
from bench.trials.races import RACE_TAGS, TAG_EXPERIMENT, TAG_REPETITION, TAG_RUN, TAG_TRACK, TAG_VARIANT, one_per_race
from bench.util.bundled import resolve_example
from bench.util.errors import ConfigError, RaceInterrupted, StoreError
from bench.util.file_lock import LockHeld, held_or_refused
from bench.util.yaml_file import read_yaml, validate_mapping

_RESERVED_TAGS = set(RACE_TAGS)
_NOT_PER_RACE = {"user_tags", "user_tag", "report_file", "report_format", "progress", "quiet"}
# `bench race` flags whose option field has another name: the file takes the flag's name (and the field's).
_CLI_NAMES = {"plugin": "plugins", "threshold": "thresholds"}


def _norm_keys(d: dict[str, Any], where: str) -> dict[str, Any]:
    out = {}
    for k, v in (d or {}).items():
        key = str(k).replace("-", "_")
        if key in _NOT_PER_RACE:
            raise ConfigError(f"{where}: option {k!r} is set by the experiment itself; remove it")
        key = _CLI_NAMES.get(key, key)
        if key in out:
            raise ConfigError(f"{where}: {k!r} is set twice (as {key.replace('_', '-')} too); keep one")
        out[key] = v
    return out


class TrackEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    track: str | None = None
    track_path: str | None = Field(default=None, alias="track-path")
    challenge: str | None = None
    track_params: dict[str, Any] = Field(default_factory=dict, alias="track-params")

    @property
    def label(self) -> str:
        """track[/challenge], or "" when the track comes from the ``race:`` options or a variant."""
        name = self.track or (Path(self.track_path).name if self.track_path else "")
        return f"{name}/{self.challenge}" if self.challenge and name else name


class StudySpec(BaseModel):
    """The ``study:`` block: what the study table (bench/reporting/study.py) reads from each variant's trials.

    - ``indexing-task``: variant -> the task whose throughput is the study's (default: the variant's first
      bulk task), because a CCR challenge may name its indexing task differently from the baseline's.
    - ``sync-task``: the task whose service time is the CCR catch-up (default: the first
      ``wait-for-followers-to-sync`` task).
    - ``clusters``: a baseline cluster name -> the candidates' cluster it is compared with (e.g. the baseline's
      single ``default`` cluster against CCR's ``leader``).
    - ``soft-deletes-off``: the variant that turns soft deletes off; on an engine that refuses that (soft
      deletes are mandatory from Elasticsearch 8 and OpenSearch 2) it is dropped and ``baseline-if-refused``
      becomes the baseline.
    - ``search-tasks``: a search task -> the cluster it queries in the variants that have that cluster (e.g.
      ``search: leader``, ``search-follower: follower``): its latency rows, per cluster (bench/reporting/study_search.py).
    - ``catch-up-within``: seconds; each variant is judged "caught up within N s after indexing stopped" or "fell
      behind" from its sync task, in a table of its own (bench/reporting/sweep.py).
    - ``link-sweep``: true when the variants differ in their topology's link between clusters (its round trip):
      lag, catch-up and leader throughput against the round trip in a table and a plot (bench/reporting/link_sweep.py).
    """

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    indexing_task: dict[str, str] = Field(default_factory=dict, alias="indexing-task")
    sync_task: str | None = Field(default=None, alias="sync-task")
    clusters: dict[str, str] = Field(default_factory=dict)
    soft_deletes_off: str | None = Field(default=None, alias="soft-deletes-off")
    baseline_if_refused: str | None = Field(default=None, alias="baseline-if-refused")
    search_tasks: dict[str, str] = Field(default_factory=dict, alias="search-tasks")
    catch_up_within: float | None = Field(default=None, gt=0, alias="catch-up-within")
    # The variants differ in the link between their clusters: lag, catch-up and throughput against its round trip
    link_sweep: bool = Field(default=False, alias="link-sweep")
    # The effect whose repetitions the resolution line says are needed (% of the baseline's main row).
    effect: float = Field(default=3.0, gt=0, lt=1000)
    note: str = ""  # set by resolve_study: which baseline the run uses, and why

    @field_validator("effect", mode="before")
    @classmethod
    def _percent(cls, v: Any) -> Any:
        return percent_value(v)


class ExperimentFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    _folder: Path | None = PrivateAttr(default=None)

    name: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    description: str = ""
    baseline: str | None = None
    repetitions: int = Field(default=1, ge=1, le=1000)
    # Set from the mapping form of ``repetitions`` (bench.race.adaptive): then ``repetitions`` is its max.
    adaptive: AdaptiveRepetitions | None = None
    order: Literal["interleaved", "random"] = "interleaved"
    tracks: list[TrackEntry] = Field(default_factory=list)
    race: dict[str, Any] = Field(default_factory=dict)
    variants: dict[str, dict[str, Any]]
    study: StudySpec | None = None

    @property
    def folder(self) -> Path | None:
        """The folder of the file it was loaded from: relative paths in it may be relative to that."""
        return self._folder

    @model_validator(mode="before")
    @classmethod
    def _adaptive(cls, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("adaptive"), dict):
            raise ValueError("'adaptive' is no key of an experiment file: write repetitions: {min: 2, max: 20, "
                             "until: {ci-within: 2%}}")
        reps = data.get("repetitions") if isinstance(data, dict) else None
        if not isinstance(reps, dict):
            return data
        adaptive = AdaptiveRepetitions.model_validate(reps)  # load_experiment words its errors first
        return {**data, "repetitions": adaptive.max, "adaptive": adaptive}

    @field_validator("tracks", mode="before")
    @classmethod
    def _tracks(cls, v: Any) -> Any:
        return [{"track": t} if isinstance(t, str) else t for t in (v or [])]

    @field_validator("variants", mode="before")
    @classmethod
    def _variants(cls, v: Any) -> Any:
        if isinstance(v, dict):
            return {str(k): (x or {}) for k, x in v.items()}
        if isinstance(v, list):  # [baseline, ccr] without options
            return {str(x): {} for x in v}
        return v

    @model_validator(mode="after")
    def _check(self) -> ExperimentFile:
        if not self.variants:
            raise ValueError("variants: at least one variant is needed")
        if self.baseline is None:
            self.baseline = next(iter(self.variants))
        if self.baseline not in self.variants:
            raise ValueError(f"baseline {self.baseline!r} is not one of the variants {list(self.variants)}")
        if self.adaptive is not None and self.order != "interleaved":
            raise ValueError("repetitions: {min, max, until}: adds interleaved rounds; set order: interleaved")
        if self.study is not None:
            for field, names in (("indexing-task", list(self.study.indexing_task)),
                                 ("soft-deletes-off", [self.study.soft_deletes_off] if self.study.soft_deletes_off
                                  else []),
                                 ("baseline-if-refused", [self.study.baseline_if_refused]
                                  if self.study.baseline_if_refused else [])):
                bad = [n for n in names if n not in self.variants]
                if bad:
                    raise ValueError(f"study.{field}: {bad[0]!r} is not one of the variants {list(self.variants)}")
        return self

    def track_entries(self) -> list[TrackEntry]:
        """The tracks; none listed means the track given in ``race`` (or a variant)."""
        return self.tracks or [TrackEntry()]


class PlannedRace(BaseModel):
    variant: str
    repetition: int  # 1-based
    track: TrackEntry
    track_index: int

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.variant, str(self.repetition), str(self.track_index))


def _resolve_path(raw: str, folder: Path | None) -> Path:
    """A relative path as given when it exists from here, else relative to the experiment file's folder or the
    folder above it (experiments/ sits next to topologies/), else as given (the race names it if missing)."""
    p = Path(raw).expanduser()
    if p.is_absolute() or p.exists() or folder is None:
        return p
    for base in (folder, folder.parent):
        if (base / p).exists():
            return base / p
    return p


def load_experiment(path: Path | str, overrides: dict[str, Any] | None = None,
                    repetitions: int | None = None) -> ExperimentFile:
    """Load and check an experiment file. ``overrides`` (bench race option names) apply to every race on top of
    the file's ``race:`` options; ``repetitions`` replaces the file's count (a quick check of a long study).
    ``path`` may name a bundled example (``ccr-overhead``, ``experiments/ccr-overhead.yml``) from any folder."""
    p = resolve_example(path, "experiments", "experiment file")
    raw = read_yaml(p, "experiment file")
    if isinstance(raw, dict) and isinstance(raw.get("repetitions"), dict):
        check_adaptive(raw["repetitions"], f"experiment file {p}")
    exp = validate_mapping(raw, ExperimentFile, p, "experiment file", "name, variants, ...")
    exp._folder = p.resolve().parent
    if overrides:
        exp.race = {**_norm_keys(exp.race, f"experiment file {p}: race"), **_norm_keys(overrides, "command line")}
    if repetitions is not None:
        if repetitions < 1:
            raise ConfigError(f"--repetitions {repetitions}: use 1 or more")
        exp.repetitions = repetitions
        exp.adaptive = None  # a count given on the command line is run as it is
    for v in exp.variants:
        opts = race_options(exp, PlannedRace(variant=v, repetition=1, track=exp.track_entries()[0], track_index=0),
                            run_id="check", where=f"experiment file {p}: variants.{v}")
        if opts.distribution or opts.plugins or opts.elasticsearch_plugins or opts.opensearch_plugins:
            # as `bench race` checks them, before any race runs
            from bench.provision.overrides import named_plugins, parse_distribution, parse_plugins

            try:
                parse_distribution(opts.distribution, opts.distribution_version)
                parse_plugins(opts.plugins)
                named_plugins(opts.elasticsearch_plugins, opts.opensearch_plugins)
            except ConfigError as e:
                raise ConfigError(f"experiment file {p}: variants.{v}: {e}") from None
    return resolve_study(exp)


def variant_engine(exp: ExperimentFile, variant: str) -> tuple[str, str]:
    """(engine, version) of the clusters a variant's races start (``distribution``, else
    ``distribution-version``, as ``bench race`` decides)."""
    from bench.provision.overrides import parse_distribution

    opts = race_options(exp, PlannedRace(variant=variant, repetition=1, track=exp.track_entries()[0],
                                         track_index=0), run_id="check")
    return parse_distribution(opts.distribution, opts.distribution_version)


def resolve_study(exp: ExperimentFile) -> ExperimentFile:
    """Pick the study's baseline for the engine: the soft-deletes-off variant stays (and stays the baseline)
    where the engine creates indices without soft deletes; elsewhere it is dropped and ``baseline-if-refused``
    is the baseline. The choice is said in ``study.note`` (shown in the report)."""
    from bench.provision.soft_deletes import soft_deletes_off_problem

    study = exp.study
    if study is None or not study.soft_deletes_off:
        return exp
    off = study.soft_deletes_off
    engine, version = variant_engine(exp, off)
    problem = soft_deletes_off_problem(engine, version)
    if problem is None:
        study.note = (f"Baseline: {exp.baseline} ({engine} {version} still creates indices with soft deletes off, "
                      f"so variant {off} runs).")
        return exp
    fallback = study.baseline_if_refused
    if not fallback or fallback == off:
        raise ConfigError(f"experiment {exp.name}: {problem}; set study.baseline-if-refused to the variant "
                          "that replaces it as baseline")
    variants = {k: v for k, v in exp.variants.items() if k != off}
    baseline = fallback if exp.baseline == off else exp.baseline
    study.note = (f"Baseline: {baseline}. Variant {off} is dropped: {problem}.")
    study.indexing_task = {k: v for k, v in study.indexing_task.items() if k != off}
    resolved = exp.model_copy(update={"variants": variants, "baseline": baseline, "study": study})
    resolved._folder = exp.folder
    return resolved


def plan(exp: ExperimentFile, run_id: str) -> list[PlannedRace]:
    """Every race of the matrix, in the order they run.

    interleaved: repetition by repetition, each one running every (track, variant) once, the variants'
    order rotated by one per repetition -- so no variant always runs first (warm caches) or last.
    random: the whole matrix shuffled with a seed derived from the run id (the same order on resume).
    """
    tracks = exp.track_entries()
    variants = list(exp.variants)
    races: list[PlannedRace] = []
    if exp.order == "interleaved":
        for rep in range(1, exp.repetitions + 1):
            shift = (rep - 1) % len(variants)
            rotated = variants[shift:] + variants[:shift]
            for ti, t in enumerate(tracks):
                races += [PlannedRace(variant=v, repetition=rep, track=t, track_index=ti) for v in rotated]
    else:
        races = [PlannedRace(variant=v, repetition=rep, track=t, track_index=ti)
                 for rep, (ti, t), v in itertools.product(range(1, exp.repetitions + 1), enumerate(tracks), variants)]
        random.Random(f"{exp.name}/{run_id}").shuffle(races)
    return races


def race_options(exp: ExperimentFile, race: PlannedRace, *, run_id: str, progress: bool = False,
                 where: str = "experiment") -> RaceOptions:
    """The RaceOptions of one planned race: ``race`` options, then the track entry, then the variant's."""
    merged: dict[str, Any] = _norm_keys(exp.race, f"{where}: race")
    track = race.track
    if track.track or track.track_path:
        merged.pop("track", None)
        merged.pop("track_path", None)
        merged.update({k: v for k, v in (("track", track.track), ("track_path", track.track_path)) if v})
    if track.challenge:
        merged["challenge"] = track.challenge
    variant = _norm_keys(exp.variants[race.variant], where)
    params = {**merged.get("track_params", {}), **track.track_params, **variant.pop("track_params", {})}
    merged.update(variant)
    merged["track_params"] = params
    for key in ("car", "telemetry"):
        if isinstance(merged.get(key), str):
            merged[key] = [c.strip() for c in merged[key].split(",") if c.strip()]
    if isinstance(merged.get("plugins"), str):  # one path; --plugin is repeated, not comma-separated
        merged["plugins"] = [merged["plugins"]]
    if merged.get("topology"):
        merged["topology"] = _resolve_path(str(merged["topology"]), exp.folder)
    tags = {str(k): str(v) for k, v in (merged.pop("tags", None) or {}).items()}
    bad = sorted(set(tags) & _RESERVED_TAGS)
    if bad:
        raise ConfigError(f"{where}: tags {bad} are set by the experiment itself")
    tags.update({TAG_EXPERIMENT: exp.name, TAG_RUN: run_id, TAG_VARIANT: race.variant,
                 TAG_REPETITION: str(race.repetition), TAG_TRACK: str(race.track_index)})
    if not merged.get("track") and not merged.get("track_path"):
        raise ConfigError(f"{where}: no track: add 'tracks: [NAME]' or 'race: {{track: NAME}}'")
    try:
        return RaceOptions(**merged, user_tags=tags, progress=progress)
    except ValidationError as e:
        err = e.errors()[0]
        loc = ".".join(str(x) for x in err["loc"])
        raise ConfigError(f"{where}: {loc.replace('_', '-')}: {err['msg']}") from None
    except TypeError as e:
        raise ConfigError(f"{where}: {e}") from None


def new_run_id() -> str:
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%S")


def runs_of(store: TrialReader, name: str) -> dict[str, list[TrialInfo]]:
    """run id -> its trials (oldest first), newest run first."""
    from bench.compare.select import matching_trials

    runs: dict[str, list[TrialInfo]] = {}
    for t in matching_trials(store, {TAG_EXPERIMENT: name}):
        runs.setdefault(t.user_tags.get(TAG_RUN, "?"), []).append(t)
    return dict(sorted(runs.items(), key=lambda kv: max(t.start_time for t in kv[1]), reverse=True))


def race_key_of(t: TrialInfo) -> tuple[str, str, str]:
    """(variant, repetition, track index): which planned race a trial ran."""
    return t.user_tags.get(TAG_VARIANT, ""), t.user_tags.get(TAG_REPETITION, ""), t.user_tags.get(TAG_TRACK, "")


def completed_keys(trials: list[TrialInfo]) -> set[tuple[str, str, str]]:
    return {race_key_of(t) for t in trials if t.status == "complete"}


class ExperimentResult(BaseModel):
    name: str
    run_id: str
    planned: int
    skipped: int  # completed before (resume)
    ran: list[str] = []  # trial ids run now
    failed: list[str] = []  # "variant#rep: error"
    ended: str | None = None  # adaptive repetitions: what ended them ("resolved", "time budget", ...)
    ended_line: str | None = None  # ... said in a sentence (the run's output and the report)


RaceRunner = Callable[[RaceOptions], Any]


def run_lock_file(name: str, run_id: str) -> Path:
    """The lock of one experiment run in this bench home (whose store its races write)."""
    from bench.util.home import bench_home

    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", run_id)
    return bench_home() / "locks" / f"experiment-{name}-{safe}.lock"


def run_held_error(name: str, run_id: str, held: LockHeld) -> StoreError:
    """The one line a second comer gets: who holds the run, and what to do."""
    h = held.holder
    who = f"pid {h['pid']}" if h.get("pid") else "another process"
    if h.get("host"):
        who += f" on {h['host']}"
    if h.get("since"):
        who += f" since {h['since']}"
    if h.get("command"):
        who += f" ({h['command']})"
    return StoreError(f"experiment {name} run {run_id} is being run by {who}: two runs at once would run its "
                      f"missing races twice; wait for it to end, then resume with --resume if races are left "
                      f"(lock {held.lock_file})")


def _lock_run(exp: ExperimentFile, store: TrialReader, resume: bool, run_id: str | None,
              stack: contextlib.ExitStack) -> str:
    """Choose the run and hold its lock (in ``stack``) until the experiment ends. The run the user named (or
    --resume's newest) is refused when another process holds it; a new run takes the next free id instead."""
    named = run_id is not None or resume
    if run_id is None:
        if resume:
            runs = runs_of(store, exp.name)
            if not runs:
                raise ConfigError(f"experiment {exp.name!r} has no run to resume: run it without --resume")
            run_id = next(iter(runs))
        else:
            run_id = new_run_id()
    while True:
        try:
            stack.enter_context(held_or_refused(run_lock_file(exp.name, run_id), "bench " + " ".join(sys.argv[1:])))
        except LockHeld as held:
            if named:
                raise run_held_error(exp.name, run_id, held) from None
            run_id += "b"  # two new runs within a second
            continue
        if named or run_id not in runs_of(store, exp.name):
            return run_id
        stack.close()
        run_id += "b"


def run_experiment(exp: ExperimentFile, *, store: TrialReader, resume: bool = False, run_id: str | None = None,
                   run_race: RaceRunner | None = None, say: Callable[[str], None] = print) -> ExperimentResult:
    """Run (or resume) an experiment. ``run_race`` defaults to ``bench.race.race.run_race``.

    A race that fails is recorded and the experiment goes on (it is run again on resume); Ctrl-C stops the
    experiment (resume later with --resume). One process at a time runs a run: it holds the run's lock
    (``run_lock_file``) throughout, and a second one is refused with a StoreError naming the holder.
    """
    if run_race is None:
        from bench.race.race import run_race as _run

        def run_race(o: RaceOptions) -> Any:
            return _run(o)

    with contextlib.ExitStack() as lock:
        run_id = _lock_run(exp, store, resume, run_id, lock)
        return _run_locked(exp, store, run_id, run_race, say)


def _run_locked(exp: ExperimentFile, store: TrialReader, run_id: str, run_race: RaceRunner,
                say: Callable[[str], None]) -> ExperimentResult:
    # Read under the lock: what a previous holder completed is skipped.
    done = completed_keys(runs_of(store, exp.name).get(run_id, []))
    races = plan(exp, run_id)
    result = ExperimentResult(name=exp.name, run_id=run_id, planned=len(races), skipped=0)
    for i, race in enumerate(races, 1):
        if exp.adaptive is not None and race.repetition > 1 and races[i - 2].repetition != race.repetition \
                and _round_ends(exp, store, run_id, race.repetition - 1, result, say):
            break
        label = f"[{i}/{len(races)}] {race.variant} #{race.repetition} on {race.track.label or 'the track'}"
        if race.key in done:
            result.skipped += 1
            say(f"{label}: done before, skipped")
            continue
        opts = race_options(exp, race, run_id=run_id)
        tried = {t.id for t in runs_of(store, exp.name).get(run_id, [])}
        say(f"{label} ...")
        try:
            r = run_race(opts)
        except RaceInterrupted:
            say(f"experiment {exp.name} run {run_id} interrupted: resume with --resume")
            raise
        except Exception as e:  # noqa: BLE001 - one failed race must not lose the others
            result.failed.append(f"{race.variant}#{race.repetition}: {e}")
            say(f"{label}: failed: {e}")
            if not _has_trial(store, exp.name, run_id, race.key, before=tried):
                record_failed_race(opts, str(e))
            continue
        trial_id = getattr(r, "trial_id", None)
        if trial_id:
            result.ran.append(trial_id)
        status = getattr(r, "status", "complete")
        if status != "complete":
            result.failed.append(f"{race.variant}#{race.repetition}: {status}")
        say(f"{label}: trial {str(trial_id)[:12]} {status}")
    if exp.adaptive is not None and result.ended is None:
        _round_ends(exp, store, run_id, exp.repetitions, result, say)
    return result


def _round_ends(exp: ExperimentFile, store: TrialReader, run_id: str, rounds: int, result: ExperimentResult,
                say: Callable[[str], None]) -> bool:
    """After a round of adaptive repetitions: whether they end here (``result`` then says why)."""
    assert exp.adaptive is not None
    trials = runs_of(store, exp.name).get(run_id, [])
    tracks = [comparison_selectors(exp, run_id, ti) for ti in range(len(exp.track_entries()))]
    labels = [exp.baseline or "", *[v for v in exp.variants if v != exp.baseline]]
    spreads = main_row_spreads(store, tracks, labels, exp.study.indexing_task if exp.study is not None else {})
    decision = decide_rounds(exp.adaptive, rounds, spreads, spent_seconds(trials))
    say(decision.line)
    if decision.stop:
        result.ended, result.ended_line = decision.ending, decision.line
    return decision.stop


def _has_trial(store: TrialReader, name: str, run_id: str, key: tuple[str, str, str], *, before: set[str]) -> bool:
    """Whether the race of ``key`` stored a trial of its own (one not in ``before``) in this run."""
    return any(t.id not in before for t in runs_of(store, name).get(run_id, []) if race_key_of(t) == key)


def record_failed_race(opts: RaceOptions, error: str) -> None:
    """A failed trial for a race that failed before it stored one (its track no longer loads, its cluster did not
    start): a night that failed early is then a failed night with its error in history, never a silent hole."""
    from bench.trials.open import open_store
    from bench.trials.sqlite import new_trial_id, utcnow
    from bench.util.redact import redact_text

    track = opts.track or (Path(opts.track_path).name if opts.track_path else "")
    trial = TrialInfo(id=new_trial_id(), track=track, challenge=opts.challenge or "",
                      car=[] if opts.target_hosts else list(opts.car), track_params=opts.track_params,
                      user_tags=opts.user_tags, pipeline=opts.pipeline or "", test_mode=opts.test_mode,
                      start_time=utcnow())
    with open_store() as store:
        store.create_trial(trial)
        store.finish_trial(trial.id, "failed", redact_text(error))


def run_verdicts(store: TrialReader, name: str, run_id: str) -> list[tuple[int, str]]:
    """Every complete race of the run that is no measurement (``bench.results.exit_status``): (its exit code, one line
    naming the variant, repetition and trial). Races run before a resume count too: they are tonight's numbers."""
    from bench.results.exit_status import EXIT_OK, run_exit_code
    from bench.trials.summary import stored_summary

    out = []
    # Failed races are counted as failed by the run; of a race stored twice, the trial the study counts is judged.
    complete, _repeated = one_per_race([t for t in runs_of(store, name).get(run_id, []) if t.status == "complete"])
    for t in complete:
        code, line = run_exit_code(stored_summary(store, t.id), t.options.get("max_error_rate"))
        if code != EXIT_OK and line is not None:
            out.append((code, f"{t.user_tags.get(TAG_VARIANT, '?')}#{t.user_tags.get(TAG_REPETITION, '?')} "
                              f"(trial {t.id[:12]}): {line}"))
    return out


def comparison_selectors(exp: ExperimentFile, run_id: str, track_index: int = 0) -> tuple[str, list[str]]:
    """tag selectors of the baseline and candidates of one run (and track)."""
    def sel(variant: str) -> str:
        return (f"tag:{TAG_EXPERIMENT}={exp.name},{TAG_RUN}={run_id},{TAG_VARIANT}={variant},"
                f"{TAG_TRACK}={track_index}")

    assert exp.baseline is not None
    return sel(exp.baseline), [sel(v) for v in exp.variants if v != exp.baseline]


def _flag(key: str, value: Any) -> str:
    """An experiment option as the ``bench race`` flag it stands for."""
    if isinstance(value, dict):
        value = ",".join(f"{k}:{v if isinstance(v, str) else json.dumps(v)}" for k, v in value.items())
    elif isinstance(value, list):
        value = ",".join(str(v) for v in value)
    return f"--{key.replace('_', '-')}={value}"


def _flags(options: dict[str, Any]) -> str:
    return " ".join(_flag(k, v) for k, v in options.items()) or "(nothing: the options every race has)"


def dry_run_lines(exp: ExperimentFile, run_id: str) -> list[str]:
    """What ``bench experiment --dry-run`` prints: the matrix, every race in run order, and a legend for each
    field. Each race's options are resolved as the real run resolves them, so a bad combination fails here."""
    races = plan(exp, run_id)
    tracks = exp.track_entries()
    order = ("interleaved: each repetition runs every variant once, their order rotated by one per repetition"
             if exp.order == "interleaved" else "random: the whole matrix shuffled, seeded by the run id")
    lines = [f"Experiment {exp.name}: {len(races)} races = {len(exp.variants)} variant(s) × {exp.repetitions} "
             f"repetition(s) × {len(tracks)} track(s); order {order}. Nothing runs with --dry-run.",
             f"Options of every race (bench race flags): {_flags(_norm_keys(exp.race, 'race'))}"]
    if exp.adaptive is not None:
        lines.append(adaptive_text(exp.adaptive))
    if exp.study is not None and exp.study.note:
        lines.append(exp.study.note)
    lines.append("Variants (what each adds to those options; the baseline is what the others are compared with):")
    for name, options in exp.variants.items():
        mark = " (baseline)" if name == exp.baseline else ""
        lines.append(f"  {name}{mark}: {_flags(_norm_keys(options, name))}")
    rows = []
    for i, r in enumerate(races, 1):
        opts = race_options(exp, r, run_id=run_id)
        track = opts.track or Path(opts.track_path or "?").name
        rows.append((str(i), r.variant, f"{r.repetition} of {exp.repetitions}",
                     f"{track}/{opts.challenge or '(default challenge)'}"))
    head = ("#", "variant", "repetition", "track/challenge")
    widths = [max(len(x[c]) for x in [head, *rows]) for c in range(len(head))]
    for row in [head, *rows]:
        lines.append("  " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())
    lines += [
        "  # ............... the race's place in the run order",
        "  variant ......... the variant whose options (above) the race adds to every race's",
        "  repetition ...... which run of that variant on that track: k of N",
        "  track/challenge . what the race runs (the track's default challenge when none is set)",
        f"Each race is a trial tagged {TAG_EXPERIMENT}={exp.name}, {TAG_RUN}=<run id>, {TAG_VARIANT}, "
        f"{TAG_REPETITION}, {TAG_TRACK}; afterwards every variant is compared with the baseline.",
    ]
    return lines
