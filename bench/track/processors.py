"""A track's processors (Rally's ``TrackProcessor``s its ``track.py`` registers), run as Rally runs them.

``on_after_load_track(track)`` runs once the track is loaded, on Rally's view of it. What Rally's processors change
there reaches the track bench runs:

- a task's ``operation.params`` (http_logs rewrites field names in queries);
- a challenge's ``parameters`` (elastic/logs stores a track id computed from them);
- corpora appended to ``track.corpora`` (elastic/logs appends the corpus it generates in ``on_prepare_track``): each
  becomes a corpus of the track, its document sets read from the processor's objects.

Any other change is refused in one line: it would otherwise be lost silently. ``on_prepare_track(track,
data_root_dir)`` runs before the race: the (function, kwargs) pairs it yields are called in order, then what the
added document sets say about themselves (a generated file's document count and size) is read again.
"""

from __future__ import annotations

import copy
import json
import logging
from pathlib import Path
from typing import Any

from bench.track.model import CorpusSpec, DocumentsSpec, Track
from bench.track.plugins import TrackPlugins, describe_import_error, user_line
from bench.util.errors import TrackError

log = logging.getLogger(__name__)


def _state(view: Any) -> str:
    """A comparable dump of the Rally view (what a processor could have changed)."""

    def enc(o: Any) -> Any:
        return {k: v for k, v in vars(o).items() if not k.startswith("__")} if hasattr(o, "__dict__") else repr(o)

    return json.dumps(view, default=enc, sort_keys=True)


def _view_tasks(view: Any) -> list[Any]:
    return [t for ch in view.challenges for step in ch.schedule for t in step]


def _params_of(view_task: Any) -> dict[str, Any]:
    params = dict(view_task.operation.params)
    params.pop("name", None)
    params.pop("operation-type", None)
    return params


def _fixed_part(view: Any, corpora: list[Any]) -> str:
    """The view's dump without what a processor may change: tasks' operation params, challenges' parameters, and
    corpora beyond the track's own (``corpora``, compared as they were)."""
    saved_ops = [(t, t.operation) for t in _view_tasks(view)]
    saved_params = [(c, c.parameters) for c in view.challenges]
    saved_corpora = view.corpora
    for t, op in saved_ops:
        t.operation = (op.name, op.type)
    for c, _ in saved_params:
        c.parameters = None
    view.corpora = corpora
    try:
        return _state(view)
    finally:
        for t, op in saved_ops:
            t.operation = op
        for c, p in saved_params:
            c.parameters = p
        view.corpora = saved_corpora


def _apply_operation_params(track: Track, view: Any) -> int:
    """Write back operation params a processor changed (Rally's ``task.operation.params``) into bench's tasks;
    returns how many tasks changed. Each changed task gets its own copy of the operation, as Rally's processors
    copy it themselves before changing it (an operation is shared by the tasks that name it)."""
    changed = 0
    bench_tasks = [t for ch in track.challenges for t in ch.tasks()]
    for task, vt in zip(bench_tasks, _view_tasks(view), strict=True):
        params = _params_of(vt)
        if params != task.operation.params:
            task.operation = task.operation.model_copy(update={"params": params})
            changed += 1
    return changed


def _apply_parameters(track: Track, view: Any) -> None:
    for ch, vc in zip(track.challenges, view.challenges, strict=True):
        if not isinstance(vc.parameters, dict):
            raise TrackError(f"challenge '{ch.name}': a track processor set its parameters to "
                             f"{type(vc.parameters).__name__}, not a dict")
        if vc.parameters != ch.parameters:
            ch.parameters = copy.deepcopy(vc.parameters)


def _count(value: Any, what: str, where: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise TrackError(f"{where}: {what} is {value!r}, not a whole number >= 0")
    return value


def documents_spec(d: Any, where: str) -> DocumentsSpec:
    """bench's document set from a Rally ``Documents`` object a processor made."""
    fmt = getattr(d, "source_format", None)
    if fmt != "bulk":
        raise TrackError(f"{where}: source-format {fmt!r}: bench reads bulk document sets only")
    file, archive = getattr(d, "document_file", None), getattr(d, "document_archive", None)
    if not (file or archive):
        raise TrackError(f"{where}: the document set names neither a document_file nor a document_archive")
    return DocumentsSpec(
        source_file=str(archive or file), base_url=getattr(d, "base_url", None),
        document_count=_count(getattr(d, "number_of_documents", 0), "number_of_documents", where) or 0,
        compressed_bytes=_count(getattr(d, "compressed_size_in_bytes", None), "compressed_size_in_bytes", where),
        uncompressed_bytes=_count(getattr(d, "uncompressed_size_in_bytes", None), "uncompressed_size_in_bytes",
                                  where),
        includes_action_and_meta_data=bool(getattr(d, "includes_action_and_meta_data", False)),
        target_index=getattr(d, "target_index", None), target_data_stream=getattr(d, "target_data_stream", None))


def _add_corpora(track: Track, plugins: TrackPlugins, added: list[Any], proc: str) -> None:
    for c in added:
        name = getattr(c, "name", None)
        where = f"{plugins.file}: track processor {proc} added corpus {name!r}"
        if not isinstance(name, str) or not name or not isinstance(getattr(c, "documents", None), list):
            raise TrackError(f"{where}: a corpus needs a name and a list of documents (esrally.track.DocumentCorpus)")
        if any(existing.name == name for existing in track.corpora):
            raise TrackError(f"{where}: the track already has a corpus of that name")
        specs = [documents_spec(d, f"{where}, documents[{i}]") for i, d in enumerate(c.documents)]
        meta = getattr(c, "meta_data", None) or {}
        track.corpora.append(CorpusSpec(name=name, meta=dict(meta), documents=specs))
        plugins.added_documents.extend(zip(track.corpora[-1].documents, c.documents, strict=True))
        log.info("%s: track processor %s added corpus %s (%d document set(s))", plugins.file, proc, name, len(specs))


def run_after_load(track: Track, plugins: TrackPlugins | None, selected_challenge: str | None = None) -> None:
    """Call every registered processor's ``on_after_load_track(track)`` and apply what it changed (see the module
    docstring)."""
    if plugins is None or not plugins.processors:
        return
    from bench.track.rally_view import RallyTrack

    for proc in plugins.processors:
        hook = getattr(proc, "on_after_load_track", None)
        if hook is None:
            continue
        name = type(proc).__name__
        view = RallyTrack(track, selected_challenge)
        own = list(view.corpora)
        before = _fixed_part(view, own)
        try:
            hook(view)
        except TrackError:
            raise
        except Exception as e:  # noqa: BLE001 - one line naming the processor and the error
            raise TrackError(f"{user_line(e, plugins.root, plugins.file)}: track processor "
                             f"{name}.on_after_load_track failed: {describe_import_error(e)}") from None
        kept = view.corpora[:len(own)] if isinstance(view.corpora, list) else []
        if len(kept) != len(own) or any(a is not b for a, b in zip(kept, own)) or _fixed_part(view, own) != before:
            raise TrackError(f"{plugins.file}: track processor {name} changed the track in on_after_load_track "
                             f"beyond tasks' operation params, challenges' parameters and added corpora; bench "
                             f"applies only these (write other changes into track.json instead)")
        _apply_parameters(track, view)
        _add_corpora(track, plugins, view.corpora[len(own):], name)
        n = _apply_operation_params(track, view)
        if n:
            log.info("%s: track processor %s changed the operation params of %d task(s)", plugins.file, name, n)


def run_prepare(track: Track, plugins: TrackPlugins | None, data_root_dir: Path,
                selected_challenge: str | None = None, *, offline: bool = False, test_mode: bool = False) -> int:
    """Rally's prepare phase: each processor's ``on_prepare_track(track, data_root_dir)`` yields (function, kwargs)
    pairs; bench calls them one after another in this process. Then each document set a processor added is read
    again from the processor's object (Rally passes those objects on to its workers) and, where its file now exists
    below ``data_root_dir/<corpus>``, that file is the one the race reads. Returns how many calls it made."""
    if plugins is None:
        return 0
    from bench.track.rally_view import RallyTrack

    calls = 0
    for proc in plugins.processors:
        hook = getattr(proc, "on_prepare_track", None)
        if hook is None:
            continue
        downloader = getattr(proc, "downloader", None)
        if downloader is not None and hasattr(downloader, "offline"):
            downloader.offline, downloader.test_mode = offline, test_mode
        try:
            for fn, kwargs in hook(RallyTrack(track, selected_challenge), str(data_root_dir)) or ():
                fn(**(kwargs or {}))
                calls += 1
        except TrackError:
            raise
        except Exception as e:  # noqa: BLE001 - one line naming the processor and the error
            raise TrackError(f"{user_line(e, plugins.root, plugins.file)}: track processor "
                             f"{type(proc).__name__}.on_prepare_track failed: {describe_import_error(e)}") from None
    _refresh_added(track, plugins, data_root_dir)
    return calls


def _refresh_added(track: Track, plugins: TrackPlugins, data_root_dir: Path) -> None:
    corpus_of = {id(d): c.name for c in track.corpora for d in c.documents}
    for spec, obj in plugins.added_documents:
        corpus = corpus_of.get(id(spec))
        if corpus is None:
            continue
        fresh = documents_spec(obj, f"{plugins.file}: corpus '{corpus}'")
        spec.document_count = fresh.document_count
        spec.uncompressed_bytes = fresh.uncompressed_bytes
        spec.compressed_bytes = fresh.compressed_bytes
        file = Path(data_root_dir) / corpus / str(getattr(obj, "document_file", None) or spec.source_file)
        if file.is_file():
            spec.local_path = file
