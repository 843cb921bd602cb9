"""The document sets of a step, prepared by a load-driver worker on a machine other than the coordinator's.

The coordinator prepares the corpora into its own data cache; the paths it found mean nothing on another
machine. A worker told to prepare (a distributed backend decides which: Ray's workers off the coordinator's node)
makes each document set of its clients' tasks available in its own data cache, from the same sources, before it
answers ``Ready``, so before the common start: ``bench.track.corpus.prepare_document_set`` with the race's
``CorpusRecipe``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from bench.track.corpus import CorpusRecipe, prepare_document_set
from bench.track.model import DocumentsSpec, Track


@dataclass(frozen=True)
class CorporaPrepared:
    """What a worker's ``Ready`` says about its preparation: wall seconds, and the CPU seconds it used (not the
    driving's: a pool measuring its workers' CPU while they drive leaves them out)."""

    seconds: float
    cpu_seconds: float


@dataclass(frozen=True)
class StepCorpora:
    """What a worker needs to prepare its step's document sets itself."""

    recipe: CorpusRecipe
    # task name -> the corpus of each of its document sets, in the order of the step plan's documents[task]
    names: dict[str, list[str]]
    # corpora the track's own code reads (its parameter sources), prepared whole like the coordinator does
    code_corpora: tuple[str, ...] = field(default=())


def step_corpora(recipe: CorpusRecipe, track: Track, documents: dict[str, list[DocumentsSpec]],
                 code_corpora: list[str] | None = None) -> StepCorpora:
    """The corpus names of ``documents`` (task name -> document sets of ``track``), with the recipe."""
    owner = {id(d): c.name for c in track.corpora for d in c.documents}
    return StepCorpora(recipe, {task: [owner[id(d)] for d in docs] for task, docs in documents.items()},
                       tuple(code_corpora or ()))


def prepare_step_documents(corpora: StepCorpora, documents: dict[str, list[DocumentsSpec]], tasks: set[str],
                           track: Track | None = None) -> int:
    """Prepare here the document sets of ``tasks`` (and the corpora the track's code reads, when ``track`` is
    that code's track), setting their ``local_path``; returns how many sets were prepared. A set shared by several
    tasks is one object in the plan, prepared once."""
    wanted: dict[int, tuple[str, DocumentsSpec]] = {}
    for task in sorted(tasks):
        for corpus, d in zip(corpora.names.get(task, []), documents.get(task, []), strict=True):
            wanted.setdefault(id(d), (corpus, d))
    if track is not None:
        for c in track.corpora:
            if c.name in corpora.code_corpora:
                for d in c.documents:
                    wanted.setdefault(id(d), (c.name, d))
    for corpus, d in wanted.values():
        d.local_path = prepare_document_set(corpus, d, corpora.recipe)
    return len(wanted)
