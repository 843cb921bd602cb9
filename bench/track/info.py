"""``bench info``: what a track holds and what of it bench can run (Rally's ``esrally info``).

Pure: from a loaded Track to text. Every task bench cannot run is marked with the reason the loader gives
when that challenge is selected for a race.
"""

from __future__ import annotations

from typing import Any

from tabulate import tabulate

from bench.track.model import Challenge, Parallel, Task, Track
from bench.track.notices import params_hint
from bench.track.source import TrackSource

NOT_RUNNABLE = "CANNOT RUN"


def _size(n: int | None) -> str:
    if n is None:
        return "-"
    size: float = n
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if size < 1024 or unit == "TB":
            return f"{size:,.0f} {unit}" if unit == "B" else f"{size:,.1f} {unit}"
        size /= 1024
    return str(size)


def _g(v: float | None, unit: str = "") -> str:
    return "-" if v is None else f"{v:g}{unit}"


def _throughput(t: Task) -> str:
    if t.arrival is not None:  # an open model: the rate iterations start at, whatever the answers do
        if t.arrival.kind == "constant-arrival-rate":
            return f"{t.arrival.rate:g} it/s arriving"
        return f"up to {max(t.arrival.start_rate, *(s.target for s in t.arrival.stages)):g} it/s arriving"
    if t.target_interval is not None:
        return f"1 per {t.target_interval:g} s"
    if t.target_throughput is None:
        return "-"
    return f"{t.target_throughput:g} {t.throughput_unit}"


def _warmup(t: Task) -> str:
    parts = []
    if t.warmup_iterations is not None:
        parts.append(f"{t.warmup_iterations} it")
    if t.warmup_time_period is not None:
        parts.append(f"{t.warmup_time_period:g} s")
    if t.ramp_up_time_period:
        parts.append(f"ramp-up {t.ramp_up_time_period:g} s")
    return ", ".join(parts) or "-"


def _measure(t: Task) -> str:
    if t.arrival is not None and t.time_period is None:
        return f"{t.arrival.duration(0.0, None):g} s of stages"
    if t.iterations is not None:
        return f"{t.iterations} it"
    if t.time_period is not None:
        ramp_down = f", ramp-down {t.ramp_down_time_period:g} s" if t.ramp_down_time_period else ""
        return f"{t.time_period:g} s{ramp_down}"
    return "corpus" if t.operation.operation_type == "bulk" else "1 it"


def schedule_rows(ch: Challenge) -> list[list[Any]]:
    rows: list[list[Any]] = []
    for i, step in enumerate(ch.schedule, 1):
        tasks = step.tasks if isinstance(step, Parallel) else [step]
        for j, t in enumerate(tasks):
            where = f"{i}" if not isinstance(step, Parallel) else f"{i}{chr(ord('a') + j)} (parallel)"
            flags = []
            if not t.include_in_reporting:
                flags.append("not reported")
            if t.schedule:
                flags.append(f"schedule {t.schedule}")
            if t.tags:
                flags.append("tags " + ",".join(t.tags))
            status = f"{NOT_RUNNABLE}: {_reason(t)}" if t.problem else "ok"
            rows.append([where, t.name, t.operation.name, t.operation.operation_type, t.clients, _warmup(t),
                         _measure(t), _throughput(t), "; ".join(flags) or "-", status])
    return rows


def _reason(t: Task) -> str:
    """The loader's message without the file and task prefix the table already shows."""
    assert t.problem is not None
    marker = f"task '{t.name}': "
    why = t.problem.split(marker, 1)[1] if marker in t.problem else t.problem
    return why.split(": use one of ", 1)[0]  # the list of every type bench has: 'bench info' of a runnable track


def render_info(track: Track, challenge: str | None = None, source: TrackSource | None = None) -> str:
    """The track's description, where it was read from (a repository's branch or revision and commit), indices,
    corpora, challenges and their schedules (only ``challenge`` in detail when given), each task bench cannot run
    marked with the reason."""
    noun, ch_noun = track.words[0], track.words[1]
    out = [f"{noun.capitalize()}: {track.name} ({track.root})"]
    if source is not None:
        out.append(f"{noun.capitalize()} from: {source.describe()}")
    out.append(f"Description: {track.description or '-'}")
    if track.params:
        out.append("Track parameters: " + ", ".join(f"{k}={v}" for k, v in track.params.items()))
    if track.undefined_params:
        out.append("Undefined template variables (rendered as empty, as Rally does): "
                   + ", ".join(track.undefined_params) + "; set them with "
                   + params_hint(track.undefined_params).replace("--track-params", "--workload-params"
                                                                 if track.format == "osb" else "--track-params"))
    if track.dependencies:
        out.append("Dependencies: " + ", ".join(track.dependencies))
    if track.indices:
        out.append("Indices: " + ", ".join(i.name for i in track.indices))
    if track.corpora:
        rows = [[c.name, d.source_file if d.generator is None else f"generated: {d.generator.name}",
                 f"{d.document_count:,}", _size(d.compressed_bytes), _size(d.uncompressed_bytes),
                 d.target_index or d.target_data_stream or "-"] for c in track.corpora for d in c.documents]
        out += ["", "Corpora:", tabulate(rows, headers=["Corpus", "File", "Docs", "Compressed", "Uncompressed",
                                                        "Target"])]
    rows = []
    for c in track.challenges:
        failing = [t for t in c.tasks() if t.problem]
        why = [*(["the challenge itself"] if c.problem else []),
               *([f"{len(failing)} of {len(c.tasks())} tasks"] if failing else [])]
        rows.append([c.name + (" (default)" if c.default else ""), f"no: {', '.join(why)}" if why else "yes",
                     c.description])
    out += ["", f"{ch_noun.capitalize()}s:", tabulate(rows, headers=[ch_noun.capitalize(), "Runnable", "Description"],
                                                      maxcolwidths=[None, None, 70])]
    shown = [track.find_challenge(challenge)] if challenge is not None else track.challenges
    for c in shown:
        out += ["", f"Schedule of challenge '{c.name}'{' (default)' if c.default else ''}:",
                tabulate(schedule_rows(c), headers=["#", "Task", "Operation", "Type", "Clients", "Warmup",
                                                    "Measured", "Target throughput", "Notes", "bench"])]
        if c.problem:
            out.append(f"{NOT_RUNNABLE}: {c.problem}")
    return "\n".join(out)
