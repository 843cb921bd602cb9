"""``esrally.track.loader``: the track-processor classes track code subclasses or registers.

bench calls a registered processor's ``on_after_load_track(track)`` after loading and ``on_prepare_track(track,
data_root_dir)`` before a race (``bench.track.plugins``). Rally's ``DefaultTrackPreparator`` downloads and
decompresses the corpora of the selected challenge: bench's race always does exactly that itself, so the registered
instance has nothing left to do.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any


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
