"""``esrally.track``: the loader's track-processor API, the parameter-source base class and the track's building
blocks (``Index``, ``DataStream``, ``IndexTemplate``, ``ComponentTemplate``)."""

from bench.track.esrally_compat.track.track import ComponentTemplate, DataStream, Index, IndexTemplate

__all__ = ["ComponentTemplate", "DataStream", "Index", "IndexTemplate"]
