"""The two folder formats bench reads: Rally's tracks and OpenSearch Benchmark's workloads.

A Rally track is a folder with ``track.json`` (and maybe ``track.py``); an OSB workload is a folder with
``workload.json`` (and maybe ``workload.py``), whose code imports ``osbenchmark.*`` and whose schedule lives in
``test_procedures``. Everything else (Jinja2 templates, operations, corpora) is Rally's format, which OSB forked.
A folder is the format of the file it holds; one holding both is Rally's track (its own file wins, as each tool
reads only its own).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal


@dataclass(frozen=True)
class TrackFormat:
    kind: Literal["rally", "osb"]
    spec_file: str  # the (Jinja2) JSON definition
    code_file: str  # the Python code with register(registry)
    noun: str  # what its users call one ("track", "workload")
    params_flag: str  # the flag that passes template parameters
    challenge_flag: str  # the flag that selects a challenge / test procedure
    challenge_noun: str


RALLY = TrackFormat("rally", "track.json", "track.py", "track", "--track-params", "--challenge", "challenge")
OSB = TrackFormat("osb", "workload.json", "workload.py", "workload", "--workload-params", "--test-procedure",
                  "test procedure")
FORMATS = (RALLY, OSB)
SPEC_FILES = tuple(f.spec_file for f in FORMATS)


def format_of(folder: Path) -> TrackFormat | None:
    """The format of a track folder (None: it holds neither file)."""
    return next((f for f in FORMATS if (Path(folder) / f.spec_file).is_file()), None)


def format_at(folder: Path) -> TrackFormat:
    """The folder's format, Rally's where it holds neither (the caller then reports the missing track.json)."""
    return format_of(folder) or RALLY
