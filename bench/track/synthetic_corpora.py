"""Which mapping each document set's synthetic documents follow (``bench race --generate-corpora``).

A document set goes into its ``target-index`` or ``target-data-stream``; with neither but
``includes-action-and-meta-data``, into the track's only index, else its first data stream (a pattern's ``*``
dropped, so the name still matches the pattern's template). The mapping is what the engine would apply when the
target is created: the matching legacy templates (by ``order``), then the matching composable template of highest
``priority`` with its component templates (``composed_of`` order, then its own), then the index's own body; properties
are merged, the later one winning. Templates and indices the challenge's own requests create count too. What was chosen is kept on the document set (``DocumentsSpec.synthetic``), so
``bench.track.corpus`` can make the file on whichever machine prepares it, and is stored with the trial
(``corpora_facts``).
"""

from __future__ import annotations

import copy
import fnmatch
import hashlib
from dataclasses import dataclass, field
from typing import Any

from bench.track.model import Challenge, DocumentsSpec, SyntheticSpec, TemplateSpec, Track
from bench.util.errors import TrackError


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for k, v in over.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else copy.deepcopy(v)
    return out


Named = tuple[str, dict[str, Any]]  # a template's or index's name and body


def _patterns(body: dict[str, Any]) -> list[str]:
    pats = body.get("index_patterns")
    if pats is None and isinstance(body.get("template"), str):
        pats = body["template"]  # a legacy template of Elasticsearch 5
    if isinstance(pats, str):
        pats = [pats]
    return [str(p) for p in (pats or [])]


def _matches(body: dict[str, Any], name: str) -> bool:
    return any(fnmatch.fnmatchcase(name, p) for p in _patterns(body))


def _mappings(body: dict[str, Any] | None) -> dict[str, Any]:
    """The ``mappings`` of a template or index body (a composable template keeps them under ``template``)."""
    if not isinstance(body, dict):
        return {}
    inner = body.get("template") if isinstance(body.get("template"), dict) else body
    m = inner.get("mappings") if isinstance(inner, dict) else None
    return m if isinstance(m, dict) else {}


def _declared(specs: list[TemplateSpec]) -> list[Named]:
    out = []
    for t in specs:
        body = dict(t.template_content or {})
        if t.index_pattern and "index_patterns" not in body:
            body["index_patterns"] = [t.index_pattern]
        out.append((t.name, body))
    return out


@dataclass
class Declarations:
    """Everything that can give a new index its mapping: the track's declarations, plus what the challenge's own
    requests create (a ``raw-request`` PUT of ``_index_template``/``_component_template``/``_template``, a
    ``create-index`` with a ``body``), as big5 does."""

    legacy: list[Named] = field(default_factory=list)
    composable: list[Named] = field(default_factory=list)
    component: list[Named] = field(default_factory=list)
    indices: list[Named] = field(default_factory=list)

    @classmethod
    def of(cls, track: Track, challenge: Challenge | None = None) -> Declarations:
        d = cls(_declared(track.templates), _declared(track.composable_templates),
                _declared(track.component_templates),
                [(i.name, i.body_content) for i in track.indices if i.body_content])
        for task in challenge.tasks() if challenge is not None else []:
            p = task.operation.params
            body = p.get("body")
            if not isinstance(body, dict):
                continue
            if task.operation.operation_type == "create-index" and isinstance(p.get("index"), str):
                d.indices.append((p["index"], body))
            if task.operation.operation_type != "raw-request" or str(p.get("method", "GET")).upper() not in (
                    "PUT", "POST"):
                continue
            parts = [x for x in str(p.get("path", "")).split("?")[0].split("/") if x]
            if len(parts) == 2:
                kind = {"_index_template": d.composable, "_component_template": d.component,
                        "_template": d.legacy}.get(parts[0])
                if kind is not None:
                    kind.append((parts[1], body))
        return d


def mapping_for(decl: Declarations, target: str) -> tuple[dict[str, Any], str]:
    """The mapping a new index or data stream named ``target`` gets, and where it came from (for the trial's
    facts)."""
    mapping: dict[str, Any] = {}
    sources: list[str] = []
    for name, body in sorted((t for t in decl.legacy if _matches(t[1], target)), key=lambda t: t[1].get("order", 0)):
        mapping = _merge(mapping, _mappings(body))
        sources.append(f"template {name}")
    composable = [t for t in decl.composable if _matches(t[1], target)]
    if composable:
        name, body = max(composable, key=lambda t: t[1].get("priority", 0))
        components = dict(decl.component)
        for c in body.get("composed_of") or []:
            if c in components:
                mapping = _merge(mapping, _mappings(components[c]))
                sources.append(f"component template {c}")
        mapping = _merge(mapping, _mappings(body))
        sources.append(f"composable template {name}")
    for name, body in decl.indices:
        if name == target:
            mapping = _merge(mapping, _mappings(body))
            sources.append(f"index {name}")
            break
    return mapping, " + ".join(sources) or "none (no mapping declared)"


def _target(track: Track, corpus: str, d: DocumentsSpec) -> tuple[str, bool]:
    """(target name, is a data stream) of a document set."""
    if d.target_data_stream:
        return d.target_data_stream, True
    if d.target_index:
        return d.target_index, False
    if d.includes_action_and_meta_data:
        if len(track.indices) == 1:
            return track.indices[0].name, False
        if track.data_streams:
            return track.data_streams[0].name.replace("*", ""), True
        if track.indices:
            return track.indices[0].name, False
    raise TrackError(f"corpus '{corpus}' document set {d.source_file}: names no target-index or target-data-stream "
                     "and the track declares no index or data stream to generate its documents for: give the "
                     "document set a target, or leave out --generate-corpora")


def document_seed(seed: int, corpus: str, d: DocumentsSpec) -> int:
    """Each document set its own stream of values (sets of one index must not repeat each other)."""
    return int(hashlib.sha256(f"{seed}/{corpus}/{d.source_file}".encode()).hexdigest()[:12], 16)


def plan_synthetic(track: Track, challenge: Challenge, wanted: list[tuple[str, DocumentsSpec]], seed: int) -> None:
    """Mark every document set in ``wanted`` to be generated from its target's mapping."""
    decl = Declarations.of(track, challenge)
    for corpus, d in wanted:
        target, stream = _target(track, corpus, d)
        mapping, source = mapping_for(decl, target)
        action = None
        if d.includes_action_and_meta_data:
            action = {"create" if stream else "index": {"_index": target}}
        d.synthetic = SyntheticSpec(seed=seed, document_seed=document_seed(seed, corpus, d), mappings=mapping,
                                    mapping_of=source, target=target, action=action, data_stream=stream,
                                    average_bytes=d.average_bytes)


def corpora_facts(wanted: list[tuple[str, DocumentsSpec]]) -> list[dict[str, Any]]:
    """What the trial's document sets were, for the trial's facts: real files, bench's generators, or synthetic."""
    out: list[dict[str, Any]] = []
    for corpus, d in wanted:
        fact: dict[str, Any] = {"corpus": corpus, "source_file": d.source_file, "documents": d.document_count}
        if d.synthetic is not None:
            fact.update(origin="synthetic", seed=d.synthetic.seed, target=d.synthetic.target,
                        mapping=d.synthetic.mapping_of)
            if d.synthetic.presence < 1.0:
                fact["field_presence"] = d.synthetic.presence
        elif d.generator is not None:
            fact.update(origin="generator", generator=d.generator.name, seed=d.generator.seed)
        else:
            fact["origin"] = "file"
        out.append(fact)
    return out


def corpora_text(facts: list[dict[str, Any]]) -> str | None:
    """One line about a trial's corpora when any of them is synthetic (None otherwise: real corpora need no
    warning)."""
    synthetic = [f for f in facts if f.get("origin") == "synthetic"]
    if not synthetic:
        return None
    seeds = sorted({int(f.get("seed", 0)) for f in synthetic})
    docs = sum(int(f.get("documents", 0)) for f in synthetic)
    return (f"SYNTHETIC: {len(synthetic)} of {len(facts)} document set(s) generated by bench from the track's "
            f"mappings (--generate-corpora, seed {', '.join(map(str, seeds))}; {docs:,} documents), not the "
            "track's published data")
