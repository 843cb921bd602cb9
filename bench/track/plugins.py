"""A track's own Python code: ``track.py`` and Rally's ``register(registry)`` plugin API.

When a track folder holds ``track.py``, loading the track imports it (as Rally does: the folder's parent goes on
``sys.path``, so ``from <track>.helpers import x`` and ``from . import x`` work; bench also lets a plain
``import helpers`` find a module beside track.py) and calls its ``register(registry)``. The registry keeps what the
track registers -- parameter sources, runners, schedulers, track processors -- for *that* track only: bench's own
registries are global, a track's registrations are not, so a second track loaded in the same process never sees the
first one's. The load driver's worker processes import the same ``track.py`` themselves (``bench.driver.track_code``).

Anything wrong in track.py (a syntax error, a failing import, an exception in ``register``) is one line naming the
file, the line and the error.
"""

from __future__ import annotations

import contextlib
import contextvars
import importlib.util
import inspect
import logging
import sys
import threading
import traceback
import types
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.compat import names as esrally_names
from bench.track.formats import OSB, format_at
from bench.track.model import DocumentsSpec, Track
from bench.util.errors import TrackError

log = logging.getLogger(__name__)

TRACK_CODE = "track.py"
# What ``registry.meta_data`` tells a track: the Rally API level bench implements (tracks branch on it).
RALLY_API_VERSION = "2.13.0"
# ... and to a workload's workload.py the OSB version whose API bench implements.
OSB_API_VERSION = "2.4.0"


@dataclass(frozen=True)
class RunnerRegistration:
    operation_type: str
    runner: Any  # an async function, or an object with an async __call__ (and maybe __aenter__/__aexit__)
    multi_cluster: bool

    @property
    def context_manager(self) -> bool:
        return hasattr(self.runner, "__aenter__") and hasattr(self.runner, "__aexit__")


@dataclass
class TrackPlugins:
    """Everything one track's ``register(registry)`` registered."""

    root: Path
    param_sources: dict[str, Any] = field(default_factory=dict)
    runners: dict[str, RunnerRegistration] = field(default_factory=dict)
    schedulers: dict[str, Any] = field(default_factory=dict)
    processors: list[Any] = field(default_factory=list)
    # Document sets processors added in on_after_load_track: (bench's spec, the processor's own object), so what
    # the object only knows after on_prepare_track (a generated file's document count) reaches the spec then.
    added_documents: list[tuple[DocumentsSpec, Any]] = field(default_factory=list)
    # OSB's query randomization: (operation name, field name) -> a function giving a standard value for the field,
    # and operation name -> which query parameters to randomize.
    standard_value_sources: dict[tuple[str, str], Any] = field(default_factory=dict)
    randomization_info: dict[str, Any] = field(default_factory=dict)

    @property
    def file(self) -> Path:
        return self.root / format_at(self.root).code_file

    def runs(self, operation_type: str) -> bool:
        return operation_type in self.runners


class TrackRegistry:
    """The ``registry`` a track's ``register(registry)`` receives (Rally's TrackPluginReader API)."""

    def __init__(self, plugins: TrackPlugins) -> None:
        self._p = plugins

    def _fail(self, what: str) -> TrackError:
        return TrackError(f"{self._p.file}: {what}")

    def register_param_source(self, name: str, param_source: Any) -> None:
        if not (inspect.isfunction(param_source) or inspect.isclass(param_source)):
            raise self._fail(f"register_param_source('{name}', ...): the parameter source must be a function or a "
                             f"class, got {type(param_source).__name__}")
        self._p.param_sources[name] = param_source

    def register_runner(self, name: str, runner: Any, **kwargs: Any) -> None:
        if not kwargs.get("async_runner", False):
            raise self._fail(f"register_runner('{name}', ...): runners must be async and registered with "
                             f"async_runner=True (as Rally requires)")
        if inspect.isclass(runner):
            raise self._fail(f"register_runner('{name}', ...): register an instance of {runner.__name__}, "
                             f"not the class")
        call = runner if isinstance(runner, types.FunctionType) else getattr(runner, "__call__", None)
        if call is None or not inspect.iscoroutinefunction(call):
            raise self._fail(f"register_runner('{name}', ...): the runner must be an async function or an object "
                             f"with an async __call__(self, es, params)")
        # Rally: a runner *having* a multi_cluster attribute gets every cluster's client; bench also takes the
        # keyword.
        multi = bool(kwargs.get("multi_cluster", False)) or hasattr(runner, "multi_cluster")
        self._p.runners[name] = RunnerRegistration(name, runner, multi)

    def register_scheduler(self, name: str, scheduler: Any) -> None:
        if name in self._p.schedulers or name in ("deterministic", "poisson"):
            raise self._fail(f"register_scheduler('{name}', ...): a scheduler named '{name}' is already registered")
        if not (inspect.isfunction(scheduler) or inspect.isclass(scheduler)):
            raise self._fail(f"register_scheduler('{name}', ...): the scheduler must be a class (or a function "
                             f"current -> next), got {type(scheduler).__name__}")
        self._p.schedulers[name] = scheduler

    def register_track_processor(self, processor: Any) -> None:
        if not hasattr(processor, "on_after_load_track") and not hasattr(processor, "on_prepare_track"):
            raise self._fail(f"register_track_processor({processor!r}): a track processor needs "
                             f"on_after_load_track(track) or on_prepare_track(track, data_root_dir)")
        if hasattr(processor, "downloader") or hasattr(processor, "decompressor"):
            # Rally injects these at registration; bench's download and decompress (--offline set before prepare)
            from bench.compat.esrally.track.loader import Decompressor, Downloader

            if hasattr(processor, "downloader"):
                processor.downloader = Downloader()
            if hasattr(processor, "decompressor"):
                processor.decompressor = Decompressor()
        self._p.processors.append(processor)

    # OSB's additions (a workload's workload.py)

    def register_workload_processor(self, processor: Any) -> None:
        if not hasattr(processor, "on_after_load_workload") and not hasattr(processor, "on_prepare_workload"):
            raise self._fail(f"register_workload_processor({processor!r}): a workload processor needs "
                             f"on_after_load_workload(workload) or on_prepare_workload(workload, data_root_dir)")
        self._p.processors.append(WorkloadProcessorAdapter(processor))

    def register_standard_value_source(self, op_name: str, field_name: str, standard_value_source: Any) -> None:
        if not callable(standard_value_source):
            raise self._fail(f"register_standard_value_source('{op_name}', '{field_name}', ...): the source must be "
                             f"a function returning a standard value, got {type(standard_value_source).__name__}")
        self._p.standard_value_sources[(op_name, field_name)] = standard_value_source

    def register_query_randomization_info(self, op_name: str, query_name: str, parameter_name_options_list: Any,
                                          optional_parameters: Any) -> None:
        self._p.randomization_info[op_name] = (query_name, parameter_name_options_list, optional_parameters)

    @property
    def meta_data(self) -> dict[str, Any]:
        if format_at(self._p.root) is OSB:
            return {"benchmark_version": OSB_API_VERSION, "async_runner": True}
        return {"rally_version": RALLY_API_VERSION, "async_runner": True}


class WorkloadProcessorAdapter:
    """An OSB workload processor seen as a Rally track processor: bench calls the Rally hook names."""

    def __init__(self, processor: Any) -> None:
        self.processor = processor

    def on_after_load_track(self, track: Any) -> None:
        hook = getattr(self.processor, "on_after_load_workload", None)
        if hook is not None:
            hook(track)

    def on_prepare_track(self, track: Any, data_root_dir: str) -> Any:
        hook = getattr(self.processor, "on_prepare_workload", None)
        return hook(track, data_root_dir) if hook is not None else iter(())

    def __repr__(self) -> str:
        return repr(self.processor)


# ---------------------------------------------------------------- importing track.py

_lock = threading.Lock()
# root -> the plugins of the track last loaded from it in this process (per track: scoping is by track folder)
_LOADED: dict[str, TrackPlugins] = {}


def user_line(e: BaseException, root: Path, default: Path) -> str:
    """file:line of the innermost frame in the track's folder (the user's line, not importlib's)."""
    for frame in reversed(traceback.extract_tb(e.__traceback__)):
        if frame.filename.startswith(str(root.parent)) and frame.lineno:
            return f"{frame.filename}:{frame.lineno}"
    return str(default)


# import name -> the distribution that provides it, where they differ
_PIP_NAMES = {"opensearchpy": "opensearch-py", "sklearn": "scikit-learn", "yaml": "pyyaml"}


def describe_import_error(e: BaseException) -> str:
    if isinstance(e, ModuleNotFoundError):
        missing = (e.name or "").split(".")[0]
        if missing == "esrally":
            return (f"ModuleNotFoundError: {e}: the track uses a module of Rally's own package that bench does not "
                    f"provide (bench provides the parts of esrally track code uses; install esrally for the rest)")
        if missing == "osbenchmark":
            return (f"ModuleNotFoundError: {e}: the workload uses a module of OSB's own package that bench does not "
                    f"provide (bench provides the parts of osbenchmark workload code uses; install "
                    f"opensearch-benchmark for the rest)")
        return f"ModuleNotFoundError: {e}: install the module the track needs (pip install {_PIP_NAMES.get(missing, missing)})"
    return f"{type(e).__name__}: {e}"


@contextlib.contextmanager
def _import_scope(root: Path) -> Iterator[None]:
    """sys.path as Rally sets it for track code (the folder's parent first) plus the folder itself last; the
    modules the track imports from its folders are taken out of sys.modules afterwards, so another track with a
    module of the same name gets its own."""
    before = set(sys.modules)
    added = [str(root.parent), str(root)]
    sys.path.insert(0, added[0])
    sys.path.append(added[1])
    try:
        yield
    finally:
        for p in added:
            with contextlib.suppress(ValueError):
                sys.path.remove(p)
        for name in set(sys.modules) - before:
            # Only what the two added folders provided (top-level name found there), never a package the track
            # imported from site-packages (a second copy of elasticsearch would break isinstance checks).
            top = name.split(".")[0]
            if any((Path(d) / top).is_dir() or (Path(d) / f"{top}.py").is_file() for d in added):
                del sys.modules[name]


def load_plugins(track_root: Path) -> TrackPlugins | None:
    """Import ``track.py`` (``workload.py`` of an OSB workload) of the track folder and call its
    ``register(registry)``; None without one."""
    root = Path(track_root).resolve()
    code = format_at(root).code_file
    file = root / code
    if not file.is_file():
        with _lock:
            _LOADED.pop(str(root), None)
        return None
    plugins = TrackPlugins(root)
    name = f"{root.name}.{Path(code).stem}"
    esrally_names.install()
    with _lock, _import_scope(root):
        try:
            spec = importlib.util.spec_from_file_location(name, file)
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            spec.loader.exec_module(module)
        except SyntaxError as e:
            raise TrackError(f"{e.filename or file}:{e.lineno}: track code has a syntax error: {e.msg}") from None
        except Exception as e:  # noqa: BLE001 - whatever track code raises is one line naming it
            raise TrackError(f"{user_line(e, root, file)}: loading {code} failed: {describe_import_error(e)}") from None
        register = getattr(module, "register", None)
        if not callable(register):
            raise TrackError(f"{file}: {code} has no register(registry) function")
        try:
            register(TrackRegistry(plugins))
        except TrackError:
            raise
        except Exception as e:  # noqa: BLE001 - see above
            raise TrackError(f"{user_line(e, root, file)}: register(registry) of {code} failed: "
                             f"{describe_import_error(e)}") from None
        _LOADED.pop(str(root), None)  # re-inserted: the last loaded track is last
        _LOADED[str(root)] = plugins
    log.info("%s registered param sources %s, runners %s, schedulers %s, %d track processor(s)", file,
             sorted(plugins.param_sources), sorted(plugins.runners), sorted(plugins.schedulers),
             len(plugins.processors))
    return plugins


def registered_runner(operation_type: str) -> Any:
    """The runner the track loaded last in this process registered for ``operation_type`` (Rally's ``runner_for``
    from track code: a worker process loads one track), or None."""
    with _lock:
        last = next(reversed(_LOADED.values()), None)
    reg = last.runners.get(operation_type) if last is not None else None
    return reg.runner if reg is not None else None


def plugins_of(track: Track) -> TrackPlugins | None:
    """The plugins loaded with this track in this process (None: the track has no track.py)."""
    with _lock:
        return _LOADED.get(str(Path(track.root).resolve()))


# ---------------------------------------------------------------- while a track loads

_ACTIVE: contextvars.ContextVar[TrackPlugins | None] = contextvars.ContextVar("bench_track_plugins", default=None)


@contextlib.contextmanager
def active(plugins: TrackPlugins | None) -> Iterator[None]:
    """Make a track's registrations visible to the operation checks of its own loading, and only there."""
    token = _ACTIVE.set(plugins)
    try:
        yield
    finally:
        _ACTIVE.reset(token)


def active_plugins() -> TrackPlugins | None:
    return _ACTIVE.get()


# ---------------------------------------------------------------- load-time checks and processors


def _builtin_schedule(name: str) -> bool:
    from bench.driver.schedule import has_scheduler

    return has_scheduler(name)


def check_constructs(track: Track, plugins: TrackPlugins | None, file: Path,
                     challenges: list[str] | None = None) -> None:
    """Every ``param-source`` and custom ``schedule`` a task names must be registered by the track's track.py: a
    name bench cannot resolve makes the task one bench cannot run, its reason naming the file, challenge, task
    and construct (never ignored): loading the challenge that has it fails with that reason (``Track.challenge``),
    ``bench info`` shows it."""
    registered = plugins.param_sources if plugins else {}
    schedulers = plugins.schedulers if plugins else {}
    source = f"{plugins.file}" if plugins else f"the track (it has no {TRACK_CODE})"
    for ch in track.challenges:
        if challenges is not None and ch.name not in challenges:
            continue
        for t in ch.tasks():
            if t.problem:
                continue
            where = f"{file}: challenge '{ch.name}', task '{t.name}'"
            ps = t.operation.params.get("param-source")
            if ps is not None and ps not in registered:
                have = f" (it registers: {', '.join(sorted(registered))})" if registered else ""
                _mark(t, f"{where}: operation '{t.operation.name}' uses param-source '{ps}', which "
                                 f"{source} does not register{have}")
            if ps is None and plugins is not None and t.operation.operation_type == "bulk" and plugins.runs("bulk"):
                # Rally would feed the track's bulk runner from its own corpus reader, whose parameters bench's
                # corpus bodies do not reproduce.
                _mark(t, f"{where}: operation '{t.operation.name}' is a bulk run by the bulk runner "
                                 f"{plugins.file} registers, without a param-source: bench sends its corpus bodies "
                                 f"only through its own bulk runner; give the operation a param-source")
            if t.schedule in schedulers and t.ops_per_second is None:
                from bench.driver.custom_schedule import scheduler_kind

                if scheduler_kind(schedulers[t.schedule]) == "simple":
                    _mark(t, f"{where}: schedule '{t.schedule}' ({schedulers[t.schedule].__qualname__}) "
                                     f"paces a target throughput: give the task target-throughput")
            if t.schedule is not None and t.schedule not in schedulers and not _builtin_schedule(t.schedule):
                have = f" (it registers: {', '.join(sorted(schedulers))})" if schedulers else ""
                _mark(t, f"{where}: schedule '{t.schedule}' is neither a built-in schedule (deterministic, "
                                 f"poisson) nor registered by {source}{have}")




def _mark(task: Any, reason: str) -> None:
    if not task.problem:
        task.problem = reason


def param_source_corpora(track: Track, plugins: TrackPlugins | None, challenge_name: str) -> list[str]:
    """The corpora the challenge's parameter sources say they read (their ``corpora`` attribute), as Rally finds
    the corpora to prepare: it makes each task's parameter source once and asks it. bench prepares these too, so
    ``documents.document_file`` is the local file when the source opens it."""
    if plugins is None or not plugins.param_sources:
        return []
    from bench.driver.custom_sources import make_source
    from bench.track.rally_view import RallyTrack

    view = RallyTrack(track, challenge_name)
    names: list[str] = []
    for t in track.challenge(challenge_name).tasks():
        ps = t.operation.params.get("param-source")
        if ps not in plugins.param_sources:
            continue
        source = make_source(plugins.param_sources[ps], ps, view, t)
        for c in getattr(source, "corpora", None) or ():
            name = getattr(c, "name", c)
            if isinstance(name, str) and name not in names:
                names.append(name)
    return names
