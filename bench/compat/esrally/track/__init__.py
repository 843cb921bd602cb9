"""``esrally.track``: the loader's track-processor API, the parameter-source base class and the track's building
blocks (``Index``, ``DataStream``, ``IndexTemplate``, ``ComponentTemplate``, ``Documents``, ``DocumentCorpus``). Rally's ``esrally.track`` re-exports
its ``track`` module with ``*``, which carries that module's own ``from esrally import exceptions``: track code
writes ``from esrally.track import exceptions``, so it is a name here too."""

from bench.compat.esrally import exceptions
from bench.compat.esrally.track.track import (
    ComponentTemplate,
    DataStream,
    DocumentCorpus,
    Documents,
    Index,
    IndexTemplate,
)

__all__ = ["ComponentTemplate", "DataStream", "DocumentCorpus", "Documents", "Index", "IndexTemplate", "exceptions"]
