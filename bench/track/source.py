"""Where a trial's track came from: bench's built-in tracks, a track repository at a commit, or a folder.

Stored with every trial (``TrialInfo.track_source``) so that ``bench compare`` can warn when two trials ran
different tracks under the same name.
"""

from __future__ import annotations

from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

from pydantic import BaseModel


class TrackSource(BaseModel):
    """Where a trial's track came from; stored with every trial so that ``bench compare`` can tell."""

    kind: Literal["built-in", "repository", "path"]
    repository: str | None = None  # the repository's name (--track-repository)
    url: str | None = None  # its URL, as bench.ini gives it
    branch: str | None = None  # the branch or revision checked out
    revision: str | None = None  # the commit
    dirty: bool = False  # the working copy had local changes
    path: str | None = None  # the track's folder (--track-path)

    def describe(self) -> str:
        if self.kind == "repository":
            commit = (self.revision or "?")[:12] + (" with local changes" if self.dirty else "")
            return f"repository {self.repository} ({self.url}) {self.branch or '?'} at {commit}"
        if self.kind == "path":
            at = f" at {self.revision[:12]}" if self.revision else ""
            return f"path {self.path}{at}" + (" with local changes" if self.dirty else "")
        return "bench built-in"


def public_url(url: str) -> str:
    """The URL without a user or password (a token in a clone URL must not be stored with trials)."""
    parts = urlsplit(url)
    if not parts.netloc or "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))


def describe_source(stored: dict[str, Any]) -> str | None:
    """The stored source in one phrase; None for a trial stored before bench recorded it (unknown)."""
    return TrackSource.model_validate(stored).describe() if stored else None
