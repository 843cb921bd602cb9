"""The vector data sets OpenSearch Benchmark's vector operations read (osbenchmark/utils/dataset.py): HDF5 files
in ann-benchmarks' layout (datasets ``train``, ``test``, ``neighbors``, ...) and Big ANN's binary files (an
8-byte header of rows and columns as little-endian uint32, then the rows: ``.fbin`` float32, ``.u8bin`` uint8,
ground truth ``.bin`` uint32 ids followed by as many float32 distances).

Rows are read lazily (h5py slices, a numpy memmap), so a client reads only its own partition.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from bench.util.errors import TrackError
from bench.util.extras import require

FORMATS = ("hdf5", "bigann")
# OSB's data set contexts -> the HDF5 dataset each reads
HDF5_DATASETS = {"index": "train", "query": "test", "neighbors": "neighbors", "radial_neighbors": "radial_neighbors",
                 "parents": "parents", "attributes": "attributes"}
_BIGANN = {"fbin": np.float32, "u8bin": np.uint8, "bin": np.uint32}


class VectorDataSet:
    """One data set's rows for one context; ``rows(start, stop)`` is a 2-D numpy array."""

    def __init__(self, fmt: str, path: str | Path, context: str) -> None:
        self.path = Path(path)
        if fmt not in FORMATS:
            raise TrackError(f"vector data set {self.path}: format {fmt!r} is not one of {', '.join(FORMATS)}")
        if not self.path.is_file():
            raise TrackError(f"vector data set {self.path} does not exist: download it there or give the path "
                             f"of your copy")
        self._data: Any
        if fmt == "hdf5":
            h5py = require("h5py", "vector", f"vector data set {self.path} (HDF5)")

            name = HDF5_DATASETS[context]
            f = h5py.File(self.path, "r")
            if name not in f:
                raise TrackError(f"vector data set {self.path} has no dataset '{name}' (it has "
                                 f"{', '.join(sorted(f.keys())) or 'none'})")
            self._data = f[name]
        else:
            self._data = _bigann(self.path)

    @property
    def size(self) -> int:
        return int(self._data.shape[0])

    def rows(self, start: int, stop: int) -> np.ndarray:
        return np.asarray(self._data[start:stop])


def _bigann(path: Path) -> np.ndarray:
    ext = path.suffix.lstrip(".")
    if ext not in _BIGANN:
        raise TrackError(f"vector data set {path}: a Big ANN file ends in .fbin, .u8bin or .bin (ground truth), "
                         f"not .{ext}")
    dtype = np.dtype(_BIGANN[ext]).newbyteorder("<")
    size = path.stat().st_size
    if size < 8:
        raise TrackError(f"vector data set {path}: {size} bytes, shorter than its 8-byte header")
    rows, cols = (int(x) for x in np.fromfile(path, dtype="<u4", count=2))
    parts = 2 if ext == "bin" else 1  # ground truth: ids, then as many distances
    if size != 8 + parts * rows * cols * dtype.itemsize:
        raise TrackError(f"vector data set {path}: {size} bytes do not match its header ({rows} rows of {cols})")
    return np.memmap(path, dtype=dtype, mode="r", offset=8, shape=(rows, cols))
