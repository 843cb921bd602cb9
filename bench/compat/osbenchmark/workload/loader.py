"""``osbenchmark.workload.loader``: workload processors, and the corpus ``Downloader``/``Decompressor`` workload
code uses to fetch its own data files (query sets, ground truth).

bench calls a registered processor's ``on_after_load_workload(workload)`` after loading and
``on_prepare_workload(workload, data_root_dir)`` before a race (``bench.track.plugins``). OSB's
``DefaultWorkloadPreparator`` downloads and decompresses the selected test procedure's corpora: bench's race always
does that itself, so the registered instance has nothing left to do.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from bench.compat.osbenchmark import exceptions
from bench.util.errors import BenchError


class WorkloadProcessor:
    """Base of OSB's workload processors: both hooks do nothing unless a subclass overrides them."""

    def on_after_load_workload(self, input_workload: Any, **kwargs: Any) -> Any:
        return input_workload

    def on_prepare_workload(self, workload: Any, data_root_dir: str) -> Iterator[tuple[Callable[..., Any],
                                                                                      dict[str, Any]]]:
        return iter(())


class DefaultWorkloadPreparator(WorkloadProcessor):
    """OSB's corpus preparation; bench's race prepares the selected test procedure's corpora itself."""

    def __init__(self, cfg: Any = None) -> None:
        super().__init__()
        self.cfg = cfg


class Downloader:
    """Downloads one data file from ``base_url`` (or ``source_url``) to ``target_path``, size-checked."""

    def __init__(self, offline: bool, test_mode: bool) -> None:
        self.offline = offline
        self.test_mode = test_mode
        self.logger = logging.getLogger(__name__)

    def download(self, base_url: str | None, source_url: str | None, target_path: str,
                 size_in_bytes: int | None) -> None:
        from bench.track.corpus import download

        if not base_url:
            raise exceptions.DataError("Cannot download data because no base URL is provided.")
        if self.offline:
            raise exceptions.SystemSetupError(f"Cannot find [{target_path}]. Please disable offline mode and retry.")
        url = source_url or f"{base_url.rstrip('/')}/{os.path.basename(target_path)}"
        Path(target_path).parent.mkdir(parents=True, exist_ok=True)
        try:
            download(url, Path(target_path))
        except BenchError as e:
            raise exceptions.DataError(f"Could not download [{url}] to [{target_path}]: {e}") from None
        actual = os.path.getsize(target_path)
        if size_in_bytes is not None and actual != size_in_bytes:
            raise exceptions.DataError(f"[{target_path}] is corrupt. Downloaded [{actual}] bytes but "
                                       f"[{size_in_bytes}] bytes are expected.")


class Decompressor:
    """Decompresses ``archive_path`` (bz2, gzip, zstd) beside itself into ``documents_path``, size-checked."""

    def __init__(self) -> None:
        self.logger = logging.getLogger(__name__)

    def decompress(self, archive_path: str, documents_path: str, uncompressed_size: int | None) -> None:
        from bench.track.corpus import decompress

        try:
            decompress(Path(archive_path), Path(documents_path))
        except BenchError as e:
            raise exceptions.DataError(f"Decompressing [{archive_path}] failed: {e}") from None
        if not os.path.isfile(documents_path):
            raise exceptions.DataError(f"Decompressing [{archive_path}] did not create [{documents_path}].")
        extracted = os.path.getsize(documents_path)
        if uncompressed_size is not None and extracted != uncompressed_size:
            raise exceptions.DataError(f"[{documents_path}] is corrupt. Extracted [{extracted}] bytes but "
                                       f"[{uncompressed_size}] bytes are expected.")
