"""``esrally.utils.io``: line sources over corpus files, as Rally's parameter sources read them."""

from __future__ import annotations

import mmap
from collections.abc import Sequence
from types import TracebackType
from typing import IO, Literal


class MmapSource:
    """A memory-mapped file read line by line (bytes, newline kept), Rally's corpus reader."""

    def __init__(self, file_name: str, mode: str, encoding: str = "utf-8") -> None:
        self.file_name = file_name
        self.mode = mode
        self.encoding = encoding
        self.f: IO[bytes] | None = None
        self.mm: mmap.mmap | None = None

    def open(self) -> MmapSource:
        self.f = open(self.file_name, mode="rb")
        self.mm = mmap.mmap(self.f.fileno(), 0, access=mmap.ACCESS_READ)
        self.mm.madvise(mmap.MADV_SEQUENTIAL)
        return self

    def _open_map(self) -> mmap.mmap:
        if self.mm is None:
            raise OSError(f"{self.file_name} is not open")
        return self.mm

    def seek(self, offset: int) -> None:
        self._open_map().seek(offset)

    def read(self) -> bytes:
        return self._open_map().read()

    def readline(self) -> bytes:
        return self._open_map().readline()

    def readlines(self, num_lines: int) -> Sequence[bytes]:
        mm = self._open_map()
        lines = []
        for _ in range(num_lines):
            line = mm.readline()
            if not line:
                break
            lines.append(line)
        return lines

    def close(self) -> None:
        if self.mm is not None:
            self.mm.close()
            self.mm = None
        if self.f is not None:
            self.f.close()
            self.f = None

    def __enter__(self) -> MmapSource:
        return self.open()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> Literal[False]:
        self.close()
        return False

    def __str__(self) -> str:
        return self.file_name


class FileSource(MmapSource):
    """Rally's plain-file source; the same reads as the mapped one."""


def skip_lines(data_file_path: str, data_file: MmapSource, number_of_lines_to_skip: int) -> None:
    """Advance ``data_file`` past its first ``number_of_lines_to_skip`` lines."""
    for _ in range(number_of_lines_to_skip):
        if not data_file.readline():
            break
