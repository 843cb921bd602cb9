"""Pre-2018 Rally track forms: read as today's equivalent where bench then does exactly what the track says,
refused in one line naming the current form where it would not.

Accepted, each with one deprecation warning line per construct and file (as Rally warned while it accepted them):

- operation-type ``index``: Rally <= 0.10's name of ``bulk``, same parameter source and parameters;
- ``types`` as a list of names next to ``body`` (Rally 1.x): ignored on the typeless engines bench runs against;
  a body whose ``mappings`` is keyed by one of those types is unwrapped (what Elasticsearch 7 did with
  ``include_type_name``), and the warning says so;
- ``types`` as objects (Rally <= 0.10): a type's ``mapping`` file becomes the index body (unwrapped the same
  way), a type's ``documents``/``document-count``/... with the track's ``data-url`` become a corpus named after
  the index. In that format Rally managed the indices itself: before each challenge it deleted them, created them
  with the challenge's ``index-settings`` and waited for a green cluster; bench puts the same three tasks first;
- a challenge's ``index-settings`` otherwise: ignored, as Rally >= 1.0 ignores them.

Refused: a challenge's ``cluster-settings`` (Rally 0.x applied them to the cluster it started), several mappings
for one index (a typeless engine has one), operations spelled with ``type`` (Rally 0.4: clients and iterations on
the operation), track format versions other than 2.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from bench.track import notices
from bench.track.model import Challenge, Operation, Task, Track
from bench.util.errors import TrackError

LEGACY_BULK = "index"
# Keys of a Rally <= 0.8 type object that describe its documents.
_DOC_KEYS = ("documents", "document-count", "compressed-bytes", "uncompressed-bytes")
# Top-level keys of an untyped mapping body.
_MAPPING_KEYS = {"properties", "dynamic", "_source", "_routing", "_meta", "dynamic_templates", "runtime",
                 "date_detection", "numeric_detection", "dynamic_date_formats", "_field_names", "_all", "enabled",
                 "subobjects", "_data_stream_timestamp"}


class Deprecations:
    """Where each accepted legacy construct was used; one warning line per construct when the track is read."""

    def __init__(self, file: Path) -> None:
        self.file = file
        self._seen: dict[str, list[str]] = {}

    def note(self, construct: str, where: str) -> None:
        places = self._seen.setdefault(construct, [])
        if where not in places:
            places.append(where)

    def warn(self) -> None:
        for construct, places in self._seen.items():
            notices.warn(f"{self.file}: deprecated Rally track form: {construct} (in {', '.join(places)})")

    @property
    def legacy_types(self) -> bool:
        return any(c.startswith(_TYPE_OBJECTS) for c in self._seen)


_TYPE_OBJECTS = "indices with 'types' objects"
_CURRENT: contextvars.ContextVar[Deprecations | None] = contextvars.ContextVar("bench_legacy", default=None)


@contextlib.contextmanager
def collecting(dep: Deprecations) -> Iterator[None]:
    """Operations parsed inside the block note their legacy spellings in ``dep``."""
    token = _CURRENT.set(dep)
    try:
        yield
    finally:
        _CURRENT.reset(token)


def check_version(raw: dict[str, Any], file: Path) -> None:
    """Rally reads track format version 2 (the default when absent) and refuses any other."""
    if "version" not in raw:
        return
    try:
        version = int(raw["version"])
    except (TypeError, ValueError):
        raise TrackError(f"{file}: version must be a number, got {raw['version']!r}") from None
    if version != 2:
        raise TrackError(f"{file}: track format version {version}: bench reads Rally's track format version 2 "
                         f"(indices with 'body', 'corpora', challenges with a 'schedule')")


def operation_spec(spec: dict[str, Any], file: Path, where: str, runs_own: Callable[[str], bool]) -> dict[str, Any]:
    """An operation object with Rally <= 0.10's type names replaced (noted in the ``collecting`` block's
    Deprecations); Rally <= 0.4's form refused."""
    dep = _CURRENT.get() or Deprecations(file)
    if "operation-type" not in spec and "type" in spec:
        raise TrackError(f"{file}: {where} ('{spec.get('name', '?')}') has 'type' but no 'operation-type': that is "
                         f"Rally 0.4's track format (clients, iterations and queries on the operation); the current "
                         f"form names the type in 'operation-type' and runs operations as tasks of a challenge's "
                         f"'schedule'")
    if spec.get("operation-type") == LEGACY_BULK and not runs_own(LEGACY_BULK):
        dep.note("operation-type 'index' read as 'bulk' (same parameters; write \"operation-type\": \"bulk\")",
                 f"operation '{spec.get('name', LEGACY_BULK)}'")
        spec = {**spec, "operation-type": "bulk"}
    return spec


def _untyped(mapping: Any, types: list[str], where: str, file: Path, dep: Deprecations) -> Any:
    """The mapping without its type level: ``{"<type>": {...}}`` becomes ``{...}`` (and says so)."""
    if not isinstance(mapping, dict):
        raise TrackError(f"{file}: {where}: the mapping must be a JSON object")
    if len(mapping) == 1:
        (key, inner), = mapping.items()
        if key in types and isinstance(inner, dict) and key not in _MAPPING_KEYS:
            dep.note("a mapping keyed by its type is unwrapped for typeless Elasticsearch/OpenSearch", where)
            return inner
    typed = [k for k in mapping if k not in _MAPPING_KEYS and isinstance(mapping[k], dict)
             and set(mapping[k]) & {"properties", "dynamic", "_source"}]
    if typed:
        raise TrackError(f"{file}: {where}: the mapping is keyed by type(s) {', '.join(typed)}, not by the index's "
                         f"type(s) {', '.join(types) or '(none)'}: give the mapping without its type level")
    return mapping


def indices(raw: dict[str, Any], file: Path, load_body: Callable[[str, str], dict[str, Any]],
            dep: Deprecations) -> tuple[list[Any], list[dict[str, Any]]]:
    """The index specs with ``types`` resolved (body files loaded with ``load_body(rel, owner)``), and the corpora
    that Rally <= 0.8 type objects describe."""
    out: list[Any] = []
    corpora: list[dict[str, Any]] = []
    data_url = raw.get("data-url")
    for i, spec in enumerate(raw.get("indices", []) or []):
        if not isinstance(spec, dict) or "types" not in spec:
            out.append(dict(spec) if isinstance(spec, dict) else spec)
            continue
        spec = dict(spec)
        types = spec.pop("types")
        where = f"indices[{i}]"
        if not isinstance(types, list):
            raise TrackError(f"{file}: {where}.types must be a list")
        if all(isinstance(t, str) for t in types):
            if spec.get("body"):
                spec["body_content"] = _typed_body(load_body(spec["body"], f"{where}.body"), types,
                                                   f"{where}.body ({spec['body']})", file, dep)
            dep.note("'types' of an index ignored (typeless Elasticsearch/OpenSearch)", where)
            out.append(spec)
            continue
        if not all(isinstance(t, dict) and isinstance(t.get("name"), str) for t in types):
            raise TrackError(f"{file}: {where}.types must be a list of type names or of objects with a 'name'")
        if spec.get("body"):
            raise TrackError(f"{file}: {where} has both 'body' and 'types' objects: give the mapping in one place")
        names = [t["name"] for t in types]
        mapped = [t for t in types if t.get("mapping")]
        if len(mapped) > 1:
            raise TrackError(f"{file}: {where} ('{spec.get('name')}') declares mappings for {len(mapped)} types "
                             f"({', '.join(t['name'] for t in mapped)}); a typeless Elasticsearch/OpenSearch index "
                             f"has one mapping: give the index one 'body'")
        if mapped:
            t = mapped[0]
            w = f"{where}.types[{types.index(t)}].mapping ({t['mapping']})"
            body = _untyped(load_body(t["mapping"], w), names, w, file, dep)
            spec["body_content"] = {"mappings": body}
        dep.note(f"{_TYPE_OBJECTS} (Rally 0.x: the index body is the type's mapping)", where)
        for j, t in enumerate(types):
            if any(k in t for k in _DOC_KEYS):
                corpora.append(_corpus(spec, t, data_url, file, f"{where}.types[{j}]"))
                dep.note(f"documents declared on an index type, read as corpus '{spec.get('name')}' "
                         f"with base-url data-url", f"{where}.types[{j}]")
        out.append(spec)
    return out, corpora


def note_target_types(raw: dict[str, Any], dep: Deprecations) -> None:
    """Rally 1.x corpora name the type their documents go to; typeless engines take none, so bench sends none."""
    for i, corpus in enumerate(raw.get("corpora", []) or []):
        if not isinstance(corpus, dict):
            continue
        documents = corpus.get("documents")
        docs = documents if isinstance(documents, list) else []
        if "target-type" in corpus or any(isinstance(d, dict) and "target-type" in d for d in docs):
            dep.note("'target-type' of a corpus ignored (typeless Elasticsearch/OpenSearch: no _type is sent)",
                     f"corpora[{i}]")


def _typed_body(body: dict[str, Any], types: list[str], where: str, file: Path, dep: Deprecations) -> dict[str, Any]:
    mappings = body.get("mappings")
    if isinstance(mappings, dict) and mappings:
        return {**body, "mappings": _untyped(mappings, types, where, file, dep)}
    return body


def _corpus(index: dict[str, Any], t: dict[str, Any], data_url: Any, file: Path, where: str) -> dict[str, Any]:
    missing = [k for k in ("documents", "document-count") if k not in t]
    if missing:
        raise TrackError(f"{file}: {where} describes documents but has no {' or '.join(missing)}")
    doc = {"source-file": t["documents"], "document-count": t["document-count"], "target-index": index.get("name"),
           "target-type": t["name"]}
    for k in ("compressed-bytes", "uncompressed-bytes"):
        if k in t:
            doc[k] = t[k]
    corpus: dict[str, Any] = {"name": index.get("name"), "documents": [doc]}
    if data_url:
        corpus["base-url"] = data_url
    return corpus


def apply_to_challenges(track: Track, raw: dict[str, Any], raw_challenges: list[dict[str, Any]], file: Path,
                        dep: Deprecations) -> None:
    """What Rally did with a challenge's legacy properties, done the same way or marked as a problem.

    With indices declared by ``types`` objects (Rally 0.x: indices "auto-managed" unless ``auto-managed: false``)
    Rally put three tasks before every challenge's schedule: delete the indices, create them (with the challenge's
    ``index-settings``) and, unless the schedule checks it itself, wait for a green cluster; bench does exactly
    that. Otherwise ``index-settings`` are ignored, as Rally >= 1.0 ignores them."""
    managed = _auto_managed(raw) if dep.legacy_types else []
    for ch in track.challenges:
        spec = next((c for c in raw_challenges if c.get("name") == ch.name), {})
        if spec.get("cluster-settings"):
            ch.problem = (f"{file}: challenge '{ch.name}': 'cluster-settings' on a challenge (Rally 0.x applied them "
                          f"to the cluster it started) are not applied by bench: set them with a put-settings task "
                          f"or in the car")
            continue
        settings = spec.get("index-settings") or {}
        if managed:
            _prepend_index_management(ch, managed, len(managed) == len(track.indices), settings)
            dep.note("indices declared by 'types' objects are deleted, created (with the challenge's index-settings) "
                     "and waited for (cluster health green) before the schedule, as Rally 0.x did", f"'{ch.name}'")
        elif settings:
            dep.note("'index-settings' of a challenge ignored, as Rally >= 1.0 ignores them (the create-index task's "
                     "'settings' apply)", f"'{ch.name}'")


def _auto_managed(raw: dict[str, Any]) -> list[str]:
    """Rally 0.x's indices that it managed itself (all but those marked ``auto-managed: false``)."""
    names = []
    for spec in raw.get("indices", []) or []:
        if isinstance(spec, dict) and spec.get("auto-managed", True) is not False:
            names.append(str(spec.get("name")))
    return names


def _prepend_index_management(ch: Challenge, names: list[str], all_indices: bool, settings: dict[str, Any]) -> None:
    target = {} if all_indices else {"index": names}
    quiet = {"include-in-reporting": False}
    tasks = [
        _admin_task("auto-delete-indices", "delete-index", {**target, **quiet, "only-if-exists": True}),
        _admin_task("auto-create-indices", "create-index", {**target, **quiet, **({"settings": settings} if settings
                                                                                 else {})}),
    ]
    if not any(t.operation.operation_type == "cluster-health" for t in ch.tasks()):
        tasks.append(_admin_task("auto-check-cluster-health", "cluster-health",
                                 {**quiet, "request-params": {"wait_for_status": "green"}}))
    ch.schedule = [*tasks, *ch.schedule]


def _admin_task(name: str, operation_type: str, params: dict[str, Any]) -> Task:
    return Task(name=name, operation=Operation(name=name, operation_type=operation_type, params=params),
                include_in_reporting=False)
