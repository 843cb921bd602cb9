"""Make the document sets a challenge needs available as local, uncompressed files.

For each document set the bulk tasks use: generate it (``generator``, or from its target's mapping with
``--generate-corpora``: ``synthetic``), or find it in
``data_dir()/<corpus>/`` or next to the track, download it from ``base-url`` if missing, and
decompress it once. Every file is written as a part file of its writer (``bench.util.file_lock.part_path``) and
renamed when complete, so an interrupted download, decompression or generation is never used. The line count is checked against
``document-count`` (x2 with action-and-meta-data lines) and remembered in ``data_dir()/.linecounts``.

``prepare_document_set`` does this for one document set on whichever machine calls it (a load-driver worker on
another machine prepares its own copy from the same sources, described by a ``CorpusRecipe``); a lock file per
document set in the data cache (per generated file for generated sets) keeps processes of one machine (workers of
one Ray node, benches running at once) from fetching or making the same file at once: the second waits for the
first, then finds the file ready.
"""

from __future__ import annotations

import bz2
import contextlib
import gzip
import hashlib
import io
import json
import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import zstandard

from bench.track.generators import generate_file
from bench.track.model import TEST_MODE_DOCS, Challenge, DocumentsSpec, Track
from bench.track.notices import warn
from bench.track.synthetic import document_lines, fit_to_size, safe_name
from bench.track.synthetic_corpora import corpora_facts, plan_synthetic
from bench.util.activity import say
from bench.util.download import fetch
from bench.util.errors import TrackError
from bench.util.file_lock import exclusive, lock_file_for, part_path, remove_stale_parts, write_atomically
from bench.util.home import data_dir

log = logging.getLogger(__name__)

_COMPRESSED = (".bz2", ".gz", ".zst")
# Part of every synthetic file's name: a change to what the generator writes for a mapping must not reuse old files.
SYNTHETIC_VERSION = 1
_BUF = 1 << 20


# ---------------------------------------------------------------- which document sets


def bulk_documents(track: Track, op_params: dict[str, Any]) -> list[DocumentsSpec]:
    """The document sets a bulk operation uses: param ``corpora`` (a name or list; default all corpora),
    restricted to the target indices in param ``indices`` and data streams in ``data-streams`` when given (Rally
    semantics)."""
    if "template" in op_params:
        return []  # documents rendered from a Loadgen template, not read from a corpus
    if "param-source" in op_params:
        return []  # bodies from the track's own parameter source (track.py)
    wanted = op_params.get("corpora")
    names = [wanted] if isinstance(wanted, str) else list(wanted or [c.name for c in track.corpora])
    indices = op_params.get("indices")
    indices = [indices] if isinstance(indices, str) else indices
    streams = op_params.get("data-streams")
    streams = [streams] if isinstance(streams, str) else streams
    out: list[DocumentsSpec] = []
    for name in names:
        for d in track.corpus(name).documents:
            if indices and d.target_index not in indices and d.target_data_stream not in indices:
                continue
            if streams and d.target_data_stream not in streams:
                continue
            out.append(d)
    return out


def _challenge_documents(track: Track, challenge: Challenge) -> list[tuple[str, DocumentsSpec]]:
    seen: set[int] = set()
    out = []
    owner = {id(d): c.name for c in track.corpora for d in c.documents}
    for task in challenge.tasks():
        if task.operation.operation_type != "bulk":
            continue
        for d in bulk_documents(track, task.operation.params):
            if id(d) not in seen:
                seen.add(id(d))
                out.append((owner[id(d)], d))
    return out


# ---------------------------------------------------------------- file helpers


def _strip_compression(name: str) -> str:
    for ext in _COMPRESSED:
        if name.endswith(ext):
            return name[: -len(ext)]
    return name


def _open_decompressed(path: Path) -> io.BufferedIOBase | BinaryIO:
    """A reader of the file's documents: bz2, gzip and zstandard decompressed on the fly."""
    if path.name.endswith(".bz2"):
        return bz2.open(path, "rb")
    if path.name.endswith(".gz"):
        return gzip.open(path, "rb")
    if path.name.endswith(".zst"):
        return zstandard.ZstdDecompressor().stream_reader(open(path, "rb"), closefd=True)
    return open(path, "rb")


def _write_atomically(target: Path, chunks: Iterator[bytes]) -> None:
    """Write ``target`` through a part file of its own; called holding the document set's lock, so any other part
    file of ``target`` is a killed writer's."""
    target.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_parts(target)
    part = part_path(target)
    try:
        with open(part, "wb") as out:
            for c in chunks:
                out.write(c)
        os.replace(part, target)
    except BaseException:
        part.unlink(missing_ok=True)
        raise


def _zstd_stream(src: Path) -> Iterator[bytes]:
    """A .zst file decompressed frame after frame; one that ends inside a frame raises EOFError (zstandard's
    stream reader returns what it has and says nothing)."""
    with open(src, "rb") as f:
        d = zstandard.ZstdDecompressor().decompressobj()
        fed = False  # whether the current frame has had any input
        while chunk := f.read(_BUF):
            while chunk:
                fed = True
                yield d.decompress(chunk)
                chunk = b""
                if d.eof:  # the next frame (pzstd and concatenated files have several) starts in unused_data
                    chunk, d, fed = d.unused_data, zstandard.ZstdDecompressor().decompressobj(), False
        if fed and not d.eof:
            raise EOFError("compressed file ended before the end-of-stream marker was reached")


def _stream(src: Path) -> Iterator[bytes]:
    if src.name.endswith(".zst"):
        yield from _zstd_stream(src)
        return
    with _open_decompressed(src) as f:
        while chunk := f.read(_BUF):
            yield chunk


def _head_lines(src: Path, lines: int) -> Iterator[bytes]:
    """The first ``lines`` lines of ``src`` (decompressing on the fly; the rest is never read)."""
    left = lines
    with _open_decompressed(src) as f:
        while left > 0 and (chunk := f.read(_BUF)):
            n = chunk.count(b"\n")
            if n < left:
                left -= n
                yield chunk
                continue
            cut = -1
            for _ in range(left):
                cut = chunk.index(b"\n", cut + 1)
            left = 0
            yield chunk[: cut + 1]


def damaged(src: Path, e: BaseException, no_download: str | None) -> TrackError:
    """A compressed corpus file that cannot be read to its end. Deleting it is advice only where bench can
    download it again: otherwise it may be the user's only copy."""
    if no_download is None:
        return TrackError(f"cannot decompress {src}: {e}; delete it to download it again")
    return TrackError(f"cannot decompress {src}: {e}: the file is damaged (truncated or corrupt) and cannot be "
                      f"downloaded again ({no_download}): replace it with a good copy from where it came from "
                      "(the track's author, the machine that made it, a backup); keep it until then")


def readable(path: Path) -> Path:
    """``path`` when this process may read it; else one line naming the file and the ways to read it (a mode-000
    or another user's file is not damaged, nor is bench's home unwritable)."""
    try:
        with open(path, "rb"):
            pass
    except PermissionError:
        try:
            import pwd

            owner = pwd.getpwuid(path.stat().st_uid).pw_name
        except (KeyError, OSError):
            owner = "its owner"
        me = _me()
        as_owner = f", run bench as {owner}" if owner != me else ""
        raise TrackError(f"corpus file {path} is not readable (permission denied) by user {me}: make it readable "
                         f"(chmod a+r {path}){as_owner}, or give --corpus-dir a folder with a readable copy") from None
    return path


def _me() -> str:
    import getpass

    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return str(os.getuid())


def decompress(src: Path, target: Path, no_download: str | None = None) -> Path:
    """``no_download``: why bench could not fetch ``src`` again (no base-url, --offline), or None."""
    readable(src)
    try:
        _write_atomically(target, _stream(src))
    except (OSError, EOFError, zstandard.ZstdError) as e:
        raise damaged(src, e, no_download) from None
    return target


def count_lines(path: Path) -> int:
    """Lines in ``path``, cached keyed by path, size and mtime (corpora are big)."""
    st = path.stat()
    key = f"{st.st_size}:{st.st_mtime_ns}"
    # Kept in the data cache, not next to the file: a track folder may be read-only or under version control.
    side = (
        data_dir()
        / ".linecounts"
        / (hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:32] + ".lines")
    )
    try:
        k, cached = side.read_text().split()
        if k == key:
            return int(cached)
    except (OSError, ValueError):
        pass
    n = 0
    last = b"\n"
    with open(path, "rb") as f:
        while chunk := f.read(_BUF):
            n += chunk.count(b"\n")
            last = chunk[-1:]
    if last != b"\n":
        n += 1  # a last line without newline is still a document
    try:
        side.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(side, f"{key} {n}".encode())  # two processes counting one file never tear it
    except OSError:
        pass
    return n


def download(url: str, target: Path) -> Path:
    """Download ``url`` to ``target`` (via a part file of its own) with a progress bar; called holding the document
    set's lock, so any other part file of ``target`` is a killed download's."""
    remove_stale_parts(target)
    part = part_path(target)
    try:
        fetch(url, part, error=TrackError, what="corpus file ")
        os.replace(part, target)
    finally:
        part.unlink(missing_ok=True)  # gone already unless something failed
    return target


def _url(base: str, name: str) -> str:
    return f"{base.rstrip('/')}/{name}"


def _one_k_name(name: str) -> str:
    """Rally's test-mode file name: documents.json.bz2 -> documents-1k.json.bz2."""
    comp = next((e for e in _COMPRESSED if name.endswith(e)), "")
    stem = name[: len(name) - len(comp)] if comp else name
    base, dot, ext = stem.rpartition(".")
    return f"{base}-1k.{ext}{comp}" if dot else f"{stem}-1k{comp}"


# ---------------------------------------------------------------- preparing one document set


def _expected_lines(d: DocumentsSpec, docs: int) -> int:
    return docs * (2 if d.includes_action_and_meta_data else 1)


def _check_lines(path: Path, d: DocumentsSpec, docs: int) -> None:
    want = _expected_lines(d, docs)
    got = count_lines(readable(path))
    if got != want:
        meta = " (x2: includes-action-and-meta-data)" if d.includes_action_and_meta_data else ""
        raise TrackError(
            f"corpus file {path} has {got} lines but document-count {docs}{meta} needs {want}: "
            f"fix document-count in the track or delete the file to fetch it again"
        )


def _generated(corpus: str, d: DocumentsSpec, docs: int) -> Path:
    g = d.generator
    assert g is not None
    extra = ""
    if g.params:
        extra = "-" + hashlib.sha256(json.dumps(g.params, sort_keys=True).encode()).hexdigest()[:10]
    path = data_dir() / corpus / f"{g.name}-seed{g.seed}-n{docs}{extra}.json"
    # Locked per generated file: document sets of other corpora or tracks with the same generator make the same one.
    with exclusive(lock_file_for(path), waiting=f"corpus {corpus}: waiting for another bench generating {path.name}"):
        if not path.is_file():
            log.info("generating %d %s documents into %s", docs, g.name, path)
            say(f"corpus {corpus}: generating {docs:,} {g.name} documents")
            remove_stale_parts(path)
            generate_file(g.name, g.seed, docs, path)
        _check_lines(path, d, docs)
    return path


@dataclass(frozen=True)
class Sources:
    """Where corpus files come from: local folders first (``--corpus-dir``, bench's data cache, the track's
    folder), then ``base-url`` unless ``offline``."""

    track_root: Path
    corpus_dir: Path | None = None
    offline: bool = False

    def candidates(self, corpus: str, name: str) -> list[Path]:
        p = Path(name)
        if p.is_absolute():
            return [p]
        local = [self.corpus_dir / corpus / name, self.corpus_dir / name] if self.corpus_dir else []
        return [*local, data_dir() / corpus / name, self.track_root / name]

    def download(self, corpus: str, d: DocumentsSpec, name: str, target: Path) -> Path:
        """Download ``name`` from the document set's base-url; offline, or when that fails, one line naming
        where bench looked for a local copy and how to point it at one."""
        if self.offline or not d.base_url:
            raise self.missing(corpus, d, "--offline: no download" if self.offline else "it has no base-url")
        try:
            return download(_url(d.base_url, name), target)
        except TrackError as e:
            raise self.missing(corpus, d, str(e)) from None

    def no_download(self, d: DocumentsSpec) -> str | None:
        """Why a file of ``d`` cannot be downloaded again, or None when it can."""
        return "--offline" if self.offline else None if d.base_url else "the document set has no base-url"

    def missing(self, corpus: str, d: DocumentsSpec, why: str) -> TrackError:
        plain = _strip_compression(d.source_file)
        looked = self.candidates(corpus, d.source_file)
        if plain != d.source_file:
            looked += self.candidates(corpus, plain)
        return TrackError(
            f"corpus '{corpus}' file {d.source_file} is not available ({why}); looked for a local copy at "
            f"{', '.join(map(str, looked))}: put it (compressed or not) in one of them, or pass "
            f"--corpus-dir=DIR holding {corpus}/{d.source_file}")


@dataclass(frozen=True)
class CorpusRecipe:
    """How a race's corpus files are made: where they come from and whether test mode cuts them. Enough for a
    load-driver worker on another machine to prepare the same files from the same sources into its own cache."""

    track_root: Path
    corpus_dir: Path | None = None
    offline: bool = False
    test_mode: bool = False

    @property
    def sources(self) -> Sources:
        return Sources(self.track_root, self.corpus_dir, self.offline)


def _file_lock(corpus: str, d: DocumentsSpec) -> contextlib.AbstractContextManager[None]:
    """Held while one document set's files are prepared: the other processes of this machine (workers of one Ray
    node, two races) wait and then find the file ready instead of downloading or decompressing it a second time."""
    digest = hashlib.sha256(f"{corpus}/{d.source_file}".encode()).hexdigest()[:16]
    path = data_dir() / ".locks" / f"{Path(_strip_compression(d.source_file)).name}-{digest}.lock"
    return exclusive(path, waiting=f"corpus {corpus}: waiting for another bench preparing {d.source_file}")


def _synthesized(corpus: str, d: DocumentsSpec, docs: int) -> Path:
    s = d.synthetic
    assert s is not None
    gen = fit_to_size(s.mappings, timestamp=s.data_stream, average_bytes=s.average_bytes, seed=s.document_seed)
    s.presence = gen.presence
    if gen.unknown_types:
        kinds = "; ".join(f"{t} ({', '.join(f[:3])}{', ...' if len(f) > 3 else ''})"
                          for t, f in sorted(gen.unknown_types.items()))
        warn(f"corpus {corpus}: bench has no value generator for field type(s) {kinds} of {s.mapping_of}: those "
             "fields are left out of the synthetic documents")
    key = json.dumps([SYNTHETIC_VERSION, s.mappings, s.action, s.data_stream]
                     + ([gen.presence] if gen.presence < 1.0 else []), sort_keys=True)
    digest = hashlib.sha256(key.encode()).hexdigest()[:12]
    stem = safe_name(Path(_strip_compression(d.source_file)).stem)
    path = data_dir() / corpus / f"synthetic-{stem}-seed{s.document_seed}-n{docs}-{digest}.json"
    with exclusive(lock_file_for(path), waiting=f"corpus {corpus}: waiting for another bench generating {path.name}"):
        if not path.is_file():
            thinned = (f", each field present with probability {gen.presence:g} to match the published documents' "
                       f"mean size ({s.average_bytes:,.0f} bytes)") if gen.presence < 1.0 and s.average_bytes else ""
            say(f"corpus {corpus}: generating {docs:,} synthetic documents from the mapping of {s.target}{thinned}")
            _write_atomically(path, document_lines(gen, s.document_seed, docs, s.action))
        _check_lines(path, d, docs)
    return path


def prepare_document_set(corpus: str, d: DocumentsSpec, recipe: CorpusRecipe) -> Path:
    """Make one document set of corpus ``corpus`` available here and return its uncompressed file: generated,
    found locally (``--corpus-dir``, this machine's data cache, the track's folder) or downloaded into the data
    cache; its line count checked. In test mode ``d.document_count`` becomes the test-mode count."""
    if d.synthetic is not None:
        docs = min(d.document_count, TEST_MODE_DOCS) if recipe.test_mode else d.document_count
        d.document_count = docs
        return _synthesized(corpus, d, docs)
    if d.generator is not None:
        docs = min(d.document_count, TEST_MODE_DOCS) if recipe.test_mode else d.document_count
        d.document_count = docs
        return _generated(corpus, d, docs)
    with _file_lock(corpus, d):
        return _prepare_file(corpus, d, recipe.sources, recipe.test_mode)


def _prepare_file(corpus: str, d: DocumentsSpec, src: Sources, test_mode: bool) -> Path:
    plain_name = _strip_compression(d.source_file)
    compressed = d.source_file != plain_name
    cache = data_dir() / corpus
    plain = [p for p in src.candidates(corpus, plain_name) if p.is_file()]
    packed = [p for p in src.candidates(corpus, d.source_file) if p.is_file()] if compressed else []

    if test_mode:
        docs = min(d.document_count, TEST_MODE_DOCS)
        target = cache / _one_k_name(plain_name)
        if not target.is_file():
            found = next(iter(plain or packed), None)
            if found is None:
                # Rally publishes a 1k variant next to each corpus file; use it, else the full file.
                one_k = cache / _one_k_name(d.source_file)
                try:
                    found = src.download(corpus, d, _one_k_name(d.source_file), one_k)
                except TrackError as e:
                    log.info("no 1k variant (%s); downloading the full corpus file", e)
                    found = src.download(corpus, d, d.source_file, cache / d.source_file)
            say(f"corpus {corpus}: taking the first {docs:,} documents of {found.name} (test mode)")
            readable(found)
            try:
                _write_atomically(target, _head_lines(found, _expected_lines(d, docs)))
            except (EOFError, zstandard.ZstdError) as e:
                raise damaged(found, e, src.no_download(d)) from None
        d.document_count = docs
        _check_lines(target, d, docs)
        return target

    if plain:
        target = plain[0]
    else:
        if not packed:
            packed = [src.download(corpus, d, d.source_file, cache / d.source_file)]
        if compressed:
            say(f"corpus {corpus}: decompressing {packed[0].name}")
        target = decompress(packed[0], cache / plain_name, src.no_download(d)) if compressed else packed[0]
    say(f"corpus {corpus}: counting the documents of {target.name}")
    _check_lines(target, d, d.document_count)
    return target


def prepare_corpora(track: Track, challenge: Challenge, *, test_mode: bool, offline: bool = False,
                    corpus_dir: Path | None = None, also: list[str] | None = None,
                    synthetic_seed: int | None = None) -> list[dict[str, Any]]:
    """Fill ``local_path`` of every document set the challenge's bulk tasks use, and of every document set of the
    corpora named in ``also`` (those a track's parameter sources read). With ``synthetic_seed`` every one of them
    is generated from its target's mapping instead (``--generate-corpora``). Returns what each set was, for the
    trial's facts."""
    recipe = CorpusRecipe(track.root, Path(corpus_dir).expanduser() if corpus_dir else None, offline, test_mode)
    wanted = _challenge_documents(track, challenge)
    seen = {id(d) for _, d in wanted}
    for c in track.corpora:
        if c.name in (also or ()):
            wanted += [(c.name, d) for d in c.documents if id(d) not in seen]
    if synthetic_seed is not None:
        plan_synthetic(track, challenge, [(c, d) for c, d in wanted if d.generator is None], synthetic_seed)
    for corpus, d in wanted:
        d.local_path = prepare_document_set(corpus, d, recipe)
        log.info("corpus %s: %s ready (%d documents)", corpus, d.local_path, d.document_count)
    return corpora_facts(wanted)
