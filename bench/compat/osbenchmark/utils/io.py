"""``osbenchmark.utils.io``: the file sources OSB's corpus helpers read (Rally's, under the same names)."""

from bench.compat.esrally.utils.io import FileSource, MmapSource, skip_lines

__all__ = ["FileSource", "MmapSource", "skip_lines"]
