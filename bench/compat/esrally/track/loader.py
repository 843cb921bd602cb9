"""``esrally.track.loader``: the track-processor classes track code subclasses or registers, and the corpus
preparation a processor may call itself.

bench calls a registered processor's ``on_after_load_track(track)`` after loading and ``on_prepare_track(track,
data_root_dir)`` before a race (``bench.track.processors``). Rally's ``DefaultTrackPreparator`` downloads and
decompresses the corpora of the selected challenge: bench's race always does exactly that itself, so the registered
instance has nothing left to do. A processor with ``downloader``/``decompressor`` attributes gets these set at
registration, as Rally sets them, so it can prepare document sets itself with ``DocumentSetPreparator`` (elastic/logs'
data generator does, before generating its corpus from them); they download and decompress through bench's own
corpus code and honour ``--offline``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from bench.compat.esrally import exceptions
from bench.util.errors import TrackError


class TrackProcessor:
    """Base of Rally's track processors: both hooks do nothing unless a subclass overrides them."""

    def on_after_load_track(self, track: Any) -> None:
        return None

    def on_prepare_track(self, track: Any, data_root_dir: str) -> Iterator[tuple[Callable[..., Any], dict[str, Any]]]:
        return iter(())


class DefaultTrackPreparator(TrackProcessor):
    """Rally's corpus preparation; bench's race prepares the selected challenge's corpora itself."""

    def __init__(self) -> None:
        super().__init__()
        self.cfg: Any = None
        self.downloader: Any = None
        self.decompressor: Any = None
        self.track: Any = None


class Downloader:
    """Rally's ``Downloader``: ``base_url/<file name>`` to ``target_path``, its size checked."""

    def __init__(self, offline: bool = False, test_mode: bool = False) -> None:
        self.offline = offline
        self.test_mode = test_mode

    def download(self, base_url: str | None, target_path: str, size_in_bytes: int | None = None) -> None:
        from bench.track.corpus import download

        if not base_url:
            raise exceptions.DataError("Cannot download data because no base URL is provided.")
        if self.offline:
            raise exceptions.SystemSetupError(f"Cannot find [{target_path}]. Please disable offline mode and retry.")
        Path(target_path).parent.mkdir(parents=True, exist_ok=True)
        try:
            download(f"{base_url.rstrip('/')}/{os.path.basename(target_path)}", Path(target_path))
        except TrackError as e:
            raise exceptions.DataError(str(e)) from None
        actual = os.path.getsize(target_path)
        if size_in_bytes is not None and actual != size_in_bytes:
            raise exceptions.DataError(f"[{target_path}] is corrupt. Downloaded [{actual}] bytes but "
                                       f"[{size_in_bytes}] bytes are expected.")


class Decompressor:
    """Rally's ``Decompressor``: the archive into the file beside it, its size checked."""

    def decompress(self, archive_path: str, documents_path: str, uncompressed_size: int | None) -> None:
        from bench.track.corpus import decompress

        try:
            decompress(Path(archive_path), Path(documents_path))
        except TrackError as e:
            raise exceptions.DataError(str(e)) from None
        actual = os.path.getsize(documents_path)
        if uncompressed_size is not None and actual != uncompressed_size:
            raise exceptions.DataError(f"[{documents_path}] is corrupt. Extracted [{actual}] bytes but "
                                       f"[{uncompressed_size}] bytes are expected.")


class DocumentSetPreparator:
    """Rally's: make one document set available below ``data_root`` (present with the expected size, else
    decompressed from its archive, else downloaded), then check its line count."""

    def __init__(self, track_name: str, downloader: Downloader, decompressor: Decompressor) -> None:
        self.track_name = track_name
        self.downloader = downloader
        self.decompressor = decompressor

    @staticmethod
    def _present(path: str | None, size: int | None) -> bool:
        # Rally's has_expected_size: a size of None (or 0, "unknown" in Rally's corpora) is not checked
        return path is not None and os.path.isfile(path) and (not size or os.path.getsize(path) == size)

    def prepare_document_set(self, document_set: Any, data_root: str) -> None:
        doc_path = os.path.join(data_root, document_set.document_file)
        archive = document_set.document_archive if document_set.has_compressed_corpus() else None
        archive_path = os.path.join(data_root, archive) if archive else None
        for _ in range(3):  # at most: download, decompress, find
            if self._present(doc_path, document_set.uncompressed_size_in_bytes):
                break
            if archive_path and self._present(archive_path, document_set.compressed_size_in_bytes):
                self.decompressor.decompress(archive_path, doc_path, document_set.uncompressed_size_in_bytes)
            else:
                target, size = ((archive_path, document_set.compressed_size_in_bytes) if archive_path
                                else (doc_path, document_set.uncompressed_size_in_bytes))
                self.downloader.download(document_set.base_url, target, size)
        else:
            raise exceptions.DataError(f"[{doc_path}] is not available after downloading and decompressing it")
        self._check_lines(doc_path, document_set)

    def _check_lines(self, doc_path: str, document_set: Any) -> None:
        from bench.track.corpus import count_lines

        expected = document_set.number_of_documents * (2 if document_set.includes_action_and_meta_data else 1)
        lines = count_lines(Path(doc_path))
        if expected and lines != expected:
            raise exceptions.DataError(f"Data in [{doc_path}] for track [{self.track_name}] are invalid. Expected "
                                       f"[{expected}] lines but got [{lines}].")
