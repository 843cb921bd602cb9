"""Find, render, parse and validate Rally-format tracks (and OpenSearch Benchmark workloads).

A track is a folder with ``track.json`` (a Jinja2 template); an OSB workload one with ``workload.json``, read as
the track it is once its test procedures are challenges (``bench.track.osb_workload``). Loading renders it with the track
parameters, parses the JSON, resolves operations referenced by name, applies ``parallel`` defaults
and validates everything with the pydantic models in ``bench.track.model``.

Iteration semantics recorded in the model (for the driver): a task with neither ``iterations`` nor
``time-period`` keeps both ``None``. For non-bulk operations that means Rally's default of one
iteration per client; for bulk it means "until the corpus is consumed".
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

import jinja2
from pydantic import BaseModel, ValidationError

from bench.driver.param_types import as_bool, as_float
from bench.driver.runners.core import CORE_RUNNERS
from bench.driver.runners.request_options import check_assertions
from bench.driver.schedule import OPS, has_scheduler, scheduler_names
from bench.track import arrival, legacy, notices, osb_workload, rally_helpers
from bench.track import dependencies as track_dependencies
from bench.track import plugins as track_plugins
from bench.track import processors as track_processors
from bench.track.formats import OSB, SPEC_FILES, format_at
from bench.track.generators import GENERATORS, generator_names
from bench.track.model import Challenge, Operation, Parallel, Task, Track
from bench.track.operations import check_operation
from bench.track.testmode import apply_test_mode
from bench.track.track_params import blame_param
from bench.util.bundled import bundled_dir
from bench.util.errors import TrackError

log = logging.getLogger(__name__)

TRACK_FILE = "track.json"
# Keys of a ``parallel`` element that are defaults for its tasks (Rally semantics).
PARALLEL_DEFAULTS = (
    "clients",
    "warmup-time-period",
    "ramp-up-time-period",
    "ramp-down-time-period",
    "time-period",
    "warmup-iterations",
    "iterations",
    "target-throughput",
    "target-interval",
)
# run-on-serverless only filters tasks on serverless clusters, which bench never targets: every task runs, as in Rally.
_TASK_KEYS = {"name", "operation", *PARALLEL_DEFAULTS, "schedule", "ignore-response-error-level", "tags", "meta",
              "include-in-reporting", "run-on-serverless", *arrival.KEYS}


class TrackListing(BaseModel):
    name: str
    description: str
    challenges: list[str]
    default_challenge: str | None


def builtin_tracks_dir() -> Path:
    return bundled_dir("tracks")


def builtin_track_names() -> list[str]:
    d = builtin_tracks_dir()
    return sorted(p.name for p in d.iterdir() if (p / TRACK_FILE).is_file()) if d.is_dir() else []


def find_track(name: str | None, path: str | Path | None) -> Path:
    """The folder of the track: ``path`` (--track-path, --workload-path) if given, else the built-in track
    ``name``."""
    if path is not None:
        p = Path(path).expanduser().resolve()
        if p.is_file() and p.name in SPEC_FILES:
            p = p.parent
        if not any((p / f).is_file() for f in SPEC_FILES):
            raise TrackError(
                f"--track-path {path}: no {' or '.join(SPEC_FILES)} in that folder; point it at a track (or OSB "
                f"workload) folder"
            )
        return p
    if not name:
        raise TrackError(
            f"no track given: pass --track (one of {', '.join(builtin_track_names())}) or --track-path"
        )
    candidate = builtin_tracks_dir() / name
    if "/" in name or not (candidate / TRACK_FILE).is_file():
        raise TrackError(
            f"unknown track '{name}': built-in tracks are {', '.join(builtin_track_names())}; "
            f"use --track-path for a track folder"
        )
    return candidate


def list_tracks() -> list[TrackListing]:
    out = []
    for name in builtin_track_names():
        t = load_track(builtin_tracks_dir() / name, {}, ignore_unused=True)
        default = next((c.name for c in t.challenges if c.default), None)
        out.append(
            TrackListing(
                name=name,
                description=t.description,
                challenges=[c.name for c in t.challenges],
                default_challenge=default,
            )
        )
    return out


# ---------------------------------------------------------------- rendering


def _syntax_error(e: jinja2.TemplateSyntaxError, root: Path) -> TrackError:
    where = e.filename or str(root / (e.name or TRACK_FILE))
    return TrackError(f"{where}:{e.lineno}: Jinja2 syntax error: {e.message}")


def _undefined_error(e: jinja2.UndefinedError, root: Path, rel: str, source: str) -> TrackError:
    """One line naming the variable and the file and line using it (the innermost template frame of the
    traceback: Jinja2 maps its frames to template files and lines)."""
    where = f"{root / rel}"
    for frame in reversed(traceback.extract_tb(e.__traceback__)):
        if frame.filename == str(root / rel) and frame.lineno:
            file, line = rally_helpers.source_line(source, str(root / rel), frame.lineno)
            where = f"{file}:{line}"
            break
        if frame.filename.startswith(str(root)) and frame.lineno and Path(frame.filename).is_file():
            where = f"{frame.filename}:{frame.lineno}"
            break
    return TrackError(f"{where}: undefined template variable: {e.message}; pass it with "
                      f"{notices.params_flag()} or give it a default (e.g. {{{{ name | default(...) }}}})")


def _render(env: jinja2.Environment, root: Path, rel: str, source: str) -> str:
    try:
        code = env.compile(source, rel, str(root / rel))
        return env.template_class.from_code(env, code, env.globals).render()
    except jinja2.UndefinedError as e:
        raise _undefined_error(e, root, rel, source) from None
    except jinja2.TemplateSyntaxError as e:
        if e.filename in (None, str(root / rel)):
            e.filename, e.lineno = rally_helpers.source_line(source, str(root / rel), e.lineno)
        raise _syntax_error(e, root) from None
    except jinja2.TemplateNotFound as e:
        raise TrackError(f"{root / rel}: included template '{e.name}' not found in {root}") from None
    except (jinja2.TemplateError, TypeError, ValueError) as e:
        raise TrackError(f"{root / rel}: cannot render the template: {type(e).__name__}: {e}") from None


def _parse_json(text: str, file: Path, *, rendered: bool, params: dict[str, Any] | None = None) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        lines = text.splitlines()
        blamed = blame_param(lines[e.lineno - 1], e.colno, params) if params and 0 < e.lineno <= len(lines) else None
        if blamed:  # a bad track parameter: name it, not a line the user never wrote
            raise TrackError(f"{blamed} ({file})") from None
        bad = lines[e.lineno - 1].strip() if 0 < e.lineno <= len(lines) else ""
        what = f"{file} (rendered track)" if rendered else str(file)
        raise TrackError(
            f"{what} line {e.lineno} column {e.colno}: invalid JSON: {e.msg}; offending line: {bad[:200]}"
        ) from None


def _render_json(env: jinja2.Environment, root: Path, rel: str, source: str, file: Path,
                 undefined: list[str], params: dict[str, Any]) -> Any:
    """Render (undefined variables print as '', as in Rally) and parse. The undefined variables that were printed
    are named, with where each is first used, in one warning line and added to ``undefined``; when the empty value
    leaves invalid JSON it is an error naming them instead."""
    with rally_helpers.undefined_printed() as printed:
        text = _render(env, root, rel, source)
    names = [p.name for p in printed]
    where = ", ".join(f"{p.name} ({_template_place(p, root, rel, source)})" for p in printed)
    try:
        data = _parse_json(text, file, rendered=True, params=params)
    except TrackError as e:
        if not printed or str(e).startswith(notices.params_flag()):  # a parameter's value broke it: that message says so
            raise
        raise TrackError(f"{file}: undefined template variable(s) {where} render as empty (as in Rally), which "
                         f"leaves invalid JSON ({str(e).removeprefix(f'{file} (rendered track) ')}); pass "
                         f"{notices.params_hint(names)}") from None
    if printed:
        notices.warn(f"{file}: undefined template variable(s) {where} rendered as empty, as Rally does; pass "
                     f"{notices.params_hint(names)} to set them")
        undefined.extend(n for n in names if n not in undefined)
    return data


def _template_place(p: rally_helpers.PrintedUndefined, root: Path, rel: str, source: str) -> str:
    """'file:line' of a printed undefined variable, relative to the track folder (collected parts resolved)."""
    if p.file is None or p.line is None:
        return rel
    file, line = (rally_helpers.source_line(source, p.file, p.line) if p.file == str(root / rel)
                  else (p.file, p.line))
    with contextlib.suppress(ValueError):
        file = str(Path(file).relative_to(root))
    return f"{file}:{line}"


def _load_template_file(
    env: jinja2.Environment, root: Path, rel: str, owner: str, used: list[str], undefined: list[str]
) -> dict[str, Any]:
    """Render and parse a body/template file referenced from the track (Rally renders them too)."""
    path = root / rel
    if not path.is_file():
        raise TrackError(f"{root / TRACK_FILE}: {owner} refers to '{rel}' but {path} does not exist")
    try:
        used.extend(rally_helpers.template_files(env, root, rel))
    except jinja2.TemplateSyntaxError as e:
        raise _syntax_error(e, root) from None
    data = _render_json(env, root, rel, path.read_text(encoding="utf-8"), path, undefined, env.globals)
    if not isinstance(data, dict):
        raise TrackError(f"{path}: must hold a JSON object")
    return data


# ---------------------------------------------------------------- validation helpers


def _loc(prefix: str, loc: tuple[Any, ...]) -> str:
    out = prefix
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def _validation_error(e: ValidationError, file: Path, prefix: str = "") -> TrackError:
    errs = e.errors()
    first = errs[0]
    where = _loc(prefix, tuple(first["loc"]))
    value = (
        f" (got {first['input']!r})"
        if first["type"] not in ("missing",) and not isinstance(first.get("input"), (dict, list))
        else ""
    )
    more = f" (and {len(errs) - 1} more problem(s))" if len(errs) > 1 else ""
    return TrackError(f"{file}: {where}: {first['msg']}{value}{more}")


def _validate(model: type[BaseModel], data: Any, file: Path, prefix: str) -> Any:
    try:
        return model.model_validate(data)
    except ValidationError as e:
        raise _validation_error(e, file, prefix) from None


_THROUGHPUT = re.compile(r"^\s*(?P<value>\d*\.?\d+)\s*(?P<unit>\w+/s)\s*$")


def _throughput(value: Any, file: Path, where: str) -> tuple[Any, str]:
    """Rally's target-throughput: a number (requests/s) or ``"<number> <unit>/s"`` (``"10 docs/s"``)."""
    if isinstance(value, str):
        m = _THROUGHPUT.match(value)
        if m is None:
            raise TrackError(f"{file}: {where}.target-throughput: cannot read {value!r}: use a number "
                             f"(requests/s) or '<number> <unit>/s' such as '100 ops/s' or '10000 docs/s'")
        return float(m.group("value")), m.group("unit")
    return value, OPS


def _integral(params: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    """Rally applies int() to sizes that Jinja arithmetic may have made floats (``{{ n / 2 }}`` = 2500.0)."""
    out = dict(params)
    for k in keys:
        v = out.get(k)
        if isinstance(v, float) and v.is_integer():
            out[k] = int(v)
    return out


_INT_PARAMS = ("bulk-size", "batch-size", "ingest-doc-count", "max-num-segments")


def _problem(file: Path, challenge: str, task: str, what: str) -> str:
    kind = OSB.challenge_noun if file.name == OSB.spec_file else "challenge"
    return f"{file}: {kind} '{challenge}', task '{task}': {what}"


def _check(op: Operation, file: Path) -> str | None:
    """Why bench cannot run the operation (None: it can)."""
    p = op.params
    try:
        check_operation(op.name, op.operation_type, p, track_file=str(file))
        if p.get("assertions") is not None:
            check_assertions(p["assertions"], f"operation '{op.name}'")
        if p.get("request-timeout") is not None:
            as_float(p["request-timeout"], "request-timeout")
        for key in ("headers", "request-params"):
            if p.get(key) is not None and not isinstance(p[key], dict):
                raise TrackError(f"operation '{op.name}' has {key} {p[key]!r}: use an object")
    except TrackError as e:
        return str(e).removeprefix(f"{file}: ")
    return None


def _operation(spec: Any, ops: dict[str, Operation], file: Path, where: str) -> Operation:
    if isinstance(spec, str):
        if spec in ops:
            return ops[spec]
        # Rally: an undeclared name is an operation of that type without parameters (e.g. "refresh").
        spec = {"name": spec, "operation-type": spec}
    if not isinstance(spec, dict):
        raise TrackError(f"{file}: {where}.operation must be an operation name or an object, got {spec!r}")
    spec = legacy.operation_spec(dict(spec), file, f"{where}.operation", _runs_own)
    if "operation-type" not in spec:
        raise TrackError(f"{file}: {where}.operation has no 'operation-type'")
    spec.setdefault("name", spec["operation-type"])
    return _normalized(_validate(Operation, spec, file, f"{where}.operation"))


def _normalized(op: Operation) -> Operation:
    op.params = _integral(op.params, _INT_PARAMS)
    return op


def _task_problem(task: Task, challenge: str, file: Path) -> str | None:
    """Why bench cannot run ``task``: its operation, its schedule or its throughput unit."""
    op = task.operation
    why = _check(op, file)
    registered = track_plugins.active_plugins()
    if why is None and task.schedule is not None and not has_scheduler(task.schedule) and not (
            registered is not None and task.schedule in registered.schedulers):
        why = (f"unknown schedule '{task.schedule}' (known: {', '.join(scheduler_names())}; a track's track.py "
               f"registers more with register_scheduler)")
    if why is None and task.throughput_unit != OPS and task.target_throughput is not None:
        reports = "docs/s" if op.operation_type == "bulk" else OPS if op.operation_type in CORE_RUNNERS else None
        if reports is not None and task.throughput_unit != reports:
            why = (f"target-throughput is in {task.throughput_unit} but a '{op.operation_type}' operation "
                   f"reports {reports}: give it in {reports} (or ops/s for requests per second)")
    if why is None and op.operation_type == "bulk" and "param-source" not in op.params:
        why = _ingest_doc_count_per_client(task)
    return _problem(file, challenge, task.name, why) if why else None


def _ingest_doc_count_per_client(task: Task) -> str | None:
    """Rally: each client indexes ingest-doc-count / clients documents, a whole number of bulks."""
    p = task.operation.params
    count, size = p.get("ingest-doc-count"), p.get("bulk-size")
    if not isinstance(count, int) or not isinstance(size, int) or size < 1:
        return None  # the operation's own check names a bad value
    per_client = count // task.clients
    if per_client % size:
        return (f"ingest-doc-count {count} over {task.clients} clients is {per_client} documents each, not a "
                f"multiple of bulk-size ({size}): make it a multiple of {size * task.clients}")
    return None


def _task(spec: Any, defaults: dict[str, Any], ops: dict[str, Operation], file: Path, where: str,
          challenge: str) -> Task:
    if not isinstance(spec, dict):
        raise TrackError(f"{file}: {where} must be an object, got {spec!r}")
    if "operation" not in spec:
        raise TrackError(f"{file}: {where} has no 'operation'")
    op = _operation(spec["operation"], ops, file, where)
    data: dict[str, Any] = {k: v for k, v in defaults.items()}
    data.update({k: v for k, v in spec.items() if k in _TASK_KEYS and k != "operation"})
    unknown = sorted(set(spec) - _TASK_KEYS - {k for k in spec if k.startswith("#")})
    if unknown:
        log.info("%s: %s ignores unknown task keys %s", file, where, unknown)
    data["operation"] = op
    data.setdefault("name", op.name)
    if "target-throughput" in data:
        data["target-throughput"], data["throughput-unit"] = _throughput(data["target-throughput"], file, where)
    _arrival_rate(data, file, where)
    if "include-in-reporting" not in data and "include-in-reporting" in op.params:
        data["include-in-reporting"] = op.params["include-in-reporting"]
    if "include-in-reporting" in data:
        try:
            data["include-in-reporting"] = as_bool(data["include-in-reporting"], "include-in-reporting")
        except TrackError as e:
            raise TrackError(f"{file}: {where}: {e}") from None
    if not data.get("meta") and isinstance(op.params.get("meta"), dict):
        data["meta"] = op.params["meta"]
    task = _validate(Task, data, file, where)
    task.problem = _task_problem(task, challenge, file)
    return task


def _arrival_rate(data: dict[str, Any], file: Path, where: str) -> None:
    """An arrival-rate task's keys become its ``arrival`` (its clients: max-clients); another task with one of
    them is refused, as is a bad value: one line naming the file, the task and the field."""
    name = data.get("name")

    def fail(field: str, why: str) -> NoReturn:
        raise TrackError(f"{file}: {where} (task '{name}'): {field} {why}")

    if data.get("schedule") not in arrival.SCHEDULES:
        for key in arrival.KEYS:
            if key in data:
                fail(key, f"applies only to schedule {' or '.join(arrival.SCHEDULES)} (this task's schedule is "
                          f"{data.get('schedule') or 'deterministic'}): remove it or set the schedule")
        return
    rate = arrival.parse(data, fail)
    for key in (*arrival.KEYS, "pre-allocated-clients"):
        data.pop(key, None)
    data["clients"], data["arrival"] = rate.max_clients, rate


def _schedule(steps: Any, ops: dict[str, Operation], file: Path, where: str, challenge: str) -> list[Task | Parallel]:
    if not isinstance(steps, list):
        raise TrackError(f"{file}: {where} must be a list of tasks")
    out: list[Task | Parallel] = []
    for j, step in enumerate(steps):
        w = f"{where}[{j}]"
        if isinstance(step, dict) and "parallel" in step:
            par = step["parallel"]
            if not isinstance(par, dict) or not isinstance(par.get("tasks"), list):
                raise TrackError(f"{file}: {w}.parallel must be an object with a 'tasks' list")
            defaults = {k: par[k] for k in PARALLEL_DEFAULTS if k in par}
            tasks = [_task(t, defaults, ops, file, f"{w}.parallel.tasks[{k}]", challenge)
                     for k, t in enumerate(par["tasks"])]
            out.append(
                _validate(
                    Parallel, {"tasks": tasks, "completed-by": par.get("completed-by")}, file, f"{w}.parallel"
                )
            )
        else:
            out.append(_task(step, {}, ops, file, w, challenge))
    return out


def merge_parameters(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """Rally's ``collections.merge_dicts``: nested objects merge, two lists become their union (as a set, so
    without duplicates), any other value of ``over`` wins."""
    out = dict(base)
    for k, v in over.items():
        old = out.get(k)
        if isinstance(old, dict) and isinstance(v, dict):
            out[k] = merge_parameters(old, v)
        elif isinstance(old, list) and isinstance(v, list):
            out[k] = list({json.dumps(x, sort_keys=True): x for x in old + v}.values())
        else:
            out[k] = v
    return out


def _challenge_parameters(track_params: Any, challenge_params: Any, file: Path, where: str) -> dict[str, Any]:
    for value, at in ((track_params, "parameters"), (challenge_params, f"{where}.parameters")):
        if value is not None and not isinstance(value, dict):
            raise TrackError(f"{file}: {at} must be an object, got {type(value).__name__}")
    return merge_parameters(track_params or {}, challenge_params or {})


def _challenges(raw: dict[str, Any], ops: dict[str, Operation], file: Path) -> list[Challenge]:
    if "challenges" in raw:
        specs, key = raw["challenges"], "challenges"
    elif "challenge" in raw:
        specs, key = [raw["challenge"]], "challenge"
    elif "schedule" in raw:
        # The shorthand: one implicit challenge (Rally calls it "default").
        specs, key = [{"name": "default", "default": True, "schedule": raw["schedule"]}], "schedule"
    else:
        raise TrackError(f"{file}: the track has no 'challenges', 'challenge' or 'schedule'")
    if not isinstance(specs, list) or not specs:
        raise TrackError(f"{file}: '{key}' must be a non-empty list of challenges")
    out = []
    for i, spec in enumerate(specs):
        where = f"challenges[{i}]" if key == "challenges" else key
        if not isinstance(spec, dict):
            raise TrackError(f"{file}: {where} must be an object")
        if "schedule" not in spec:
            raise TrackError(f"{file}: {where} ('{spec.get('name', '?')}') has no 'schedule'")
        sched_where = f"{where}.schedule" if key != "schedule" else "schedule"
        schedule = _schedule(spec["schedule"], ops, file, sched_where, str(spec.get("name", "?")))
        data = {k: v for k, v in spec.items() if k != "schedule"}
        data["schedule"] = schedule
        data["parameters"] = _challenge_parameters(raw.get("parameters"), spec.get("parameters"), file, where)
        ch = _validate(Challenge, data, file, where)
        names = [t.name for t in ch.tasks()]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise TrackError(
                f"{file}: challenge '{ch.name}' has several tasks named {', '.join(dupes)}: "
                f"give each task a unique 'name'"
            )
        out.append(ch)
    names = [c.name for c in out]
    if len(set(names)) != len(names):
        raise TrackError(f"{file}: duplicate challenge names in {names}")
    if len(out) == 1:
        out[0].default = True
    defaults = [c.name for c in out if c.default]
    if len(defaults) > 1:
        raise TrackError(
            f"{file}: several challenges are marked default ({', '.join(defaults)}): mark only one"
        )
    if not defaults:
        raise TrackError(f'{file}: no challenge is marked "default": true; mark one of {", ".join(names)}')
    return out


def _operations(raw: dict[str, Any], file: Path) -> dict[str, Operation]:
    specs = raw.get("operations", [])
    if not isinstance(specs, list):
        raise TrackError(f"{file}: 'operations' must be a list")
    ops: dict[str, Operation] = {}
    for i, spec in enumerate(specs):
        if isinstance(spec, dict):
            spec = legacy.operation_spec(spec, file, f"operations[{i}]", _runs_own)
        if not isinstance(spec, dict) or "name" not in spec or "operation-type" not in spec:
            raise TrackError(f"{file}: operations[{i}] needs a 'name' and an 'operation-type'")
        op = _normalized(_validate(Operation, spec, file, f"operations[{i}]"))
        if op.name in ops:
            raise TrackError(f"{file}: operations[{i}]: duplicate operation name '{op.name}'")
        # Checked where a task uses it: Rally tracks declare operations (e.g. node-stats) that the
        # challenge a user runs may never touch.
        ops[op.name] = op
    return ops


# ---------------------------------------------------------------- the track


def render_track_json(track_dir: Path, params: dict[str, Any]) -> str:
    """Rally's ``render-track``: track.json rendered with ``params`` (Jinja2, Rally's helpers), as indented JSON."""
    root = Path(track_dir).resolve()
    spec = format_at(root).spec_file
    file = root / spec
    env = rally_helpers.make_environment(root, params)
    source = rally_helpers.assemble(root, file.read_text(encoding="utf-8"))
    return json.dumps(_render_json(env, root, spec, source, file, [], params), indent=2)


def load_track(
    track_dir: Path, params: dict[str, Any], *, ignore_unused: bool = False, test_mode: bool = False,
    challenge: str | None = None, check_challenge: bool = False, offline: bool = False,
) -> Track:
    """The track, every challenge parsed. The tasks bench cannot run carry their ``problem``; with
    ``check_challenge`` the selected challenge (``challenge``, else the default) must have none, else a
    TrackError naming the file, challenge, task and construct. ``Track.challenge()`` checks the same. The track's
    ``dependencies`` are installed first unless ``offline`` (then a missing one is an error)."""
    with notices.naming_params_flag(format_at(Path(track_dir).resolve()).params_flag):
        return _load_track(track_dir, params, ignore_unused=ignore_unused, test_mode=test_mode, challenge=challenge,
                           check_challenge=check_challenge, offline=offline)


def _load_track(track_dir: Path, params: dict[str, Any], *, ignore_unused: bool, test_mode: bool,
                challenge: str | None, check_challenge: bool, offline: bool) -> Track:
    root = Path(track_dir).resolve()
    fmt = format_at(root)
    file = root / fmt.spec_file
    if not file.is_file():
        raise TrackError(f"{root}: no {TRACK_FILE} found; a track folder needs one")
    env = rally_helpers.make_environment(root, params)
    try:
        used_files = rally_helpers.template_files(env, root, fmt.spec_file)
    except jinja2.TemplateSyntaxError as e:
        raise _syntax_error(e, root) from None
    source = rally_helpers.assemble(root, file.read_text(encoding="utf-8"))
    undefined: list[str] = []
    raw = _render_json(env, root, fmt.spec_file, source, file, undefined, params)
    if not isinstance(raw, dict):
        raise TrackError(f"{file}: the rendered {fmt.noun} must be a JSON object")
    if fmt is OSB:
        raw = osb_workload.as_track(raw, file)

    legacy.check_version(raw, file)
    deprecations = legacy.Deprecations(file)

    def load_body(rel: str, owner: str) -> dict[str, Any]:
        return _load_template_file(env, root, rel, owner, used_files, undefined)

    indices, legacy_corpora = legacy.indices(raw, file, load_body, deprecations)
    legacy.note_target_types(raw, deprecations)
    for i, spec in enumerate(indices):
        if isinstance(spec, dict) and spec.get("body") and "body_content" not in spec:
            spec["body_content"] = load_body(spec["body"], f"indices[{i}].body")
    templates = {key: [_with_template(spec, f"{key}[{i}].template", load_body)
                       for i, spec in enumerate(raw.get(key, []) or [])]
                 for key in ("templates", "composable-templates", "component-templates")}
    if not ignore_unused:
        _refuse_unused(root, fmt.noun, params, used_files)

    deps = track_dependencies.parse(raw.get("dependencies"), file)
    track_dependencies.ensure(deps, file, offline=offline)
    # track.py (Rally's register(registry) API): its runners are operation types of this track only.
    plugins = track_plugins.load_plugins(root)
    with track_plugins.active(plugins), legacy.collecting(deprecations):
        ops = _operations(raw, file)
        challenges = _challenges(raw, ops, file)
    data = {
        "name": root.name,
        "description": raw.get("description", ""),
        "root": root,
        "indices": indices,
        "templates": templates["templates"],
        "composable-templates": templates["composable-templates"],
        "component-templates": templates["component-templates"],
        "data-streams": raw.get("data-streams", []) or [],
        "corpora": (raw.get("corpora", []) or []) + legacy_corpora,
        "challenges": challenges,
        "params": dict(params),
        "dependencies": deps,
        "undefined-params": undefined,
        "format": fmt.kind,
        "thresholds": raw.get("thresholds") or {},
    }
    try:
        track = _validate(Track, data, file, "")
    except TrackError as e:
        if undefined and "''" in str(e):
            raise TrackError(f"{e}{_undefined_note(undefined)}") from None
        raise
    _checked(track, raw, file, plugins, challenge, undefined, deprecations)
    if check_challenge:
        track.challenge(challenge)
    return apply_test_mode(track) if test_mode else track


def _with_template(spec: Any, owner: str, load_body: Callable[[str, str], dict[str, Any]]) -> Any:
    """An index template's spec with the content of the file its ``template`` names."""
    spec = dict(spec) if isinstance(spec, dict) else spec
    if isinstance(spec, dict) and spec.get("template"):
        spec["template_content"] = load_body(spec["template"], owner)
    return spec


def _refuse_unused(root: Path, noun: str, params: dict[str, Any], used_files: Any) -> None:
    """A parameter the track never reads is an error (Rally's rule; --ignore-unused-track-params allows it)."""
    # Analysed in an environment without the params: Jinja2 does not report names that are globals.
    used = rally_helpers.used_variables(rally_helpers.make_environment(root), root, used_files)
    unused = sorted(set(params) - used)
    if unused:
        raise TrackError(
            f"{noun} '{root.name}' does not use the {noun} parameter(s) {', '.join(unused)}; "
            f"it uses: {', '.join(sorted(used)) or '(none)'}"
        )


def _checked(track: Track, raw: dict[str, Any], file: Path, plugins: Any, challenge: str | None,
             undefined: list[str], deprecations: legacy.Deprecations) -> None:
    """The checks and changes after validation, in their order."""
    _default_target_index(track, file)
    # Processors first: what they change in operation params, and the corpora they add, is what the checks and the
    # race see.
    track_processors.run_after_load(track, plugins, challenge)
    _check_corpora_refs(track, file)
    track_plugins.check_constructs(track, plugins, file)
    if undefined:
        _blame_undefined(track, undefined)
    legacy.apply_to_challenges(track, raw, _challenge_specs(raw), file, deprecations)
    deprecations.warn()


def _challenge_specs(raw: dict[str, Any]) -> list[dict[str, Any]]:
    specs = raw.get("challenges") or ([raw["challenge"]] if "challenge" in raw else [])
    return [c for c in specs if isinstance(c, dict)] if isinstance(specs, list) else []


def _runs_own(operation_type: str) -> bool:
    plugins = track_plugins.active_plugins()
    return plugins is not None and plugins.runs(operation_type)


def _blame_undefined(track: Track, undefined: list[str]) -> None:
    """A task bench cannot run because of an empty value (shown as '') says which variables rendered empty."""
    for ch in track.challenges:
        for t in ch.tasks():
            if t.problem and "''" in t.problem:
                t.problem += _undefined_note(undefined)


def _undefined_note(undefined: list[str]) -> str:
    return (f" (the track leaves {', '.join(undefined)} undefined, rendered as empty: pass "
            f"{notices.params_hint(undefined)})")


def _default_target_index(track: Track, file: Path) -> None:
    """Rally: with exactly one index (or else one data stream), documents without a target go there."""
    for c in track.corpora:
        for d in c.documents:
            if d.target_index is None and d.target_data_stream is None:
                if len(track.indices) == 1:
                    d.target_index = track.indices[0].name
                elif len(track.data_streams) == 1:
                    d.target_data_stream = track.data_streams[0].name


def _check_corpora_refs(track: Track, file: Path) -> None:
    for i, c in enumerate(track.corpora):
        for j, d in enumerate(c.documents):
            if d.generator is None:
                continue
            where = f"{file}: corpora[{i}].documents[{j}]"
            if d.generator.name not in GENERATORS:
                raise TrackError(
                    f"{where}.generator.name: unknown generator '{d.generator.name}': "
                    f"use one of {', '.join(generator_names())}"
                )
            if d.includes_action_and_meta_data:
                raise TrackError(
                    f"{where}: generated documents have no action-and-meta-data lines; "
                    f"remove includes-action-and-meta-data"
                )
    names = {c.name for c in track.corpora}
    for ch in track.challenges:
        for t in ch.tasks():
            if t.operation.operation_type != "bulk" or t.problem or "param-source" in t.operation.params:
                continue  # (a track's parameter source makes its own bodies)
            wanted = t.operation.params.get("corpora")
            wanted = [wanted] if isinstance(wanted, str) else (wanted or [])
            missing = [w for w in wanted if w not in names]
            count = t.operation.params.get("ingest-doc-count")
            total = sum(d.document_count for c in track.corpora if c.name in (wanted or names) for d in c.documents)
            if isinstance(count, int) and not missing and names and count > total:
                t.problem = _problem(file, ch.name, t.name, (
                    f"ingest-doc-count {count} is more than the {total} documents of its corpora"))
            elif missing:
                t.problem = _problem(file, ch.name, t.name, (
                    f"operation '{t.operation.name}' uses corpora {', '.join(missing)} that the track does not "
                    f"define (it defines: {', '.join(sorted(names)) or 'none'})"))
            elif not names:
                t.problem = _problem(file, ch.name, t.name, "a bulk, but the track defines no corpora")
