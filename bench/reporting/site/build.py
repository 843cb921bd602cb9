"""``bench history site``: build (or bring up to date) the static history site of one or more experiments in a
folder: ``index.html``, a page per experiment, a page per night under ``nights/``, ``assets/`` (one stylesheet, the
filters' script). Every link is relative, so the folder works from ``file://`` and from any static host.

Incremental: ``.bench-site.json`` in the folder keeps the summaries of finished trials (they never change, so only
tonight's are read from the store) and, per page, a digest of what it was made from and of its text; a page whose
inputs are unchanged is not rendered again, and a file whose text is unchanged is not written again. Pages of
nights that are no longer in the store are removed.

A trial that cannot be read (its row, summary or samples damaged) does not stop the build: its night is built
without it and marked (the night's page names the trial and what is wrong, the experiment's page lists the night),
and ``BuildResult.damaged`` has one line per such trial for the command to print.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from datetime import UTC
from pathlib import Path

from pydantic import BaseModel

import bench
from bench.race.experiment import TAG_EXPERIMENT, ExperimentFile
from bench.reporting.site import pages
from bench.reporting.site.nights import SummaryCache, experiment_nights
from bench.reporting.site.series import charts as make_charts
from bench.reporting.site.series import night_page
from bench.trials.annotations import Annotation
from bench.trials.model import ALL_TRIALS, TrialReader
from bench.util.errors import ConfigError

MANIFEST = ".bench-site.json"
ASSETS = ("site.css", "filters.js")
_FORMAT = 1


class BuildResult(BaseModel):
    output: str
    nights: int
    charts: int
    written: list[str]  # pages written (new or changed)
    unchanged: int
    removed: list[str]
    summaries_read: int
    seconds: float
    damaged: list[str] = []  # one line per trial left out because it cannot be read, naming where it was


def _digest(*parts: str) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode())
        h.update(b"\0")
    return h.hexdigest()


def _load_manifest(path: Path) -> dict[str, object]:
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as e:
        raise ConfigError(f"{path} cannot be read ({e}): delete it and the site is built from scratch") from None
    return data if isinstance(data, dict) and data.get("format") == _FORMAT else {}


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def build_site(store: TrialReader, experiments: list[ExperimentFile], output: Path, *, window: int,
               annotations: list[Annotation]) -> BuildResult:
    started = time.perf_counter()
    _check(experiments, output)
    manifest_path = output / MANIFEST
    manifest = _load_manifest(manifest_path)
    cache = SummaryCache(manifest.get("summaries") or {})  # type: ignore[arg-type]
    old_inputs: dict[str, str] = dict(manifest.get("inputs") or {})  # type: ignore[call-overload]
    old_texts: dict[str, str] = dict(manifest.get("texts") or {})  # type: ignore[call-overload]
    version = f"{bench.__version__}/{_FORMAT}/" + "".join(
        _digest((pages.site_dir() / name).read_text()) for name in sorted(os.listdir(pages.site_dir())))

    trials = store.list_trials(ALL_TRIALS)
    damaged_rows = list(store.damaged)
    placed: set[str] = set()
    texts: dict[str, str | None] = {}  # page -> its text, None when its inputs are unchanged (not rendered)
    inputs: dict[str, str] = {}
    summaries, n_nights, n_charts, last = [], 0, 0, None
    damaged: list[str] = []
    ann_json = json.dumps([a.model_dump() for a in sorted(annotations, key=lambda a: a.id)])

    def page(path: str, key: str, render: object) -> None:
        inputs[path] = key
        unchanged = old_inputs.get(path) == key and (output / path).is_file()
        texts[path] = None if unchanged else render()  # type: ignore[operator]

    for exp in experiments:
        mine = sorted((t for t in trials if t.user_tags.get(TAG_EXPERIMENT) == exp.name), key=lambda t: t.start_time)
        broken = [d for d in damaged_rows if d.user_tags.get(TAG_EXPERIMENT) == exp.name]
        placed |= {d.id for d in broken}
        nights = experiment_nights(store, exp, mine, cache, broken)
        damaged += [f"{line} (experiment {exp.name}, night {n.run_id}{_entry(exp, n.track_index)} marked)"
                    for n in nights for line in n.damaged]
        charts = make_charts(nights, annotations, window=window)
        n_nights += len({n.run_id for n in nights})
        n_charts += len(charts)
        if nights:
            last = max(last or nights[-1].date, nights[-1].date)
        for night in nights:
            night_ann = [a for a in annotations if a.day == night.date.astimezone(UTC).date()]
            page(night_page(night), _digest(version, night.model_dump_json(),
                                            json.dumps([a.model_dump() for a in night_ann])),
                 lambda night=night: pages.render_night(night, annotations))
        key = _digest(version, str(window), ann_json, *(n.model_dump_json() for n in nights))
        page(pages.experiment_page(exp.name), key,
             lambda exp=exp, nights=nights, charts=charts: pages.render_experiment(exp.name, nights, charts,
                                                                                  window=window))
        summaries.append(pages.experiment_summary(exp.name, nights, charts))
    # Damaged rows whose experiment cannot be read may belong to any of these experiments: said on the index.
    unplaced = [f"trial {d.id}: {d.problem}" for d in damaged_rows
                if d.id not in placed and TAG_EXPERIMENT not in d.user_tags]
    damaged += [f"{line} (its experiment cannot be read: on no night)" for line in unplaced]
    index = pages.render_index(summaries, last_night=f"{last:%Y-%m-%d %H:%M} UTC" if last else "none yet",
                               damaged=unplaced)
    inputs["index.html"] = _digest(index)
    texts["index.html"] = index
    for name in ASSETS:
        text = (pages.site_dir() / name).read_text()
        inputs[f"assets/{name}"] = _digest(text)
        texts[f"assets/{name}"] = text

    written, unchanged, new_texts, removed = _write_pages(output, texts, old_texts)
    _write(manifest_path, json.dumps({"format": _FORMAT, "inputs": inputs, "texts": new_texts,
                                      "summaries": cache.stored}, sort_keys=True))
    return BuildResult(output=str(output), nights=n_nights, charts=n_charts, written=sorted(written),
                       unchanged=unchanged, removed=removed, summaries_read=cache.read,
                       seconds=round(time.perf_counter() - started, 3), damaged=damaged)


def _check(experiments: list[ExperimentFile], output: Path) -> None:
    """Every experiment has a study, and the site's folder can be made: else one line, before anything is read."""
    for exp in experiments:
        if exp.study is None:
            raise ConfigError(f"experiment {exp.name}: the history site follows a study's rows: add a 'study:' block "
                              "(e.g. study: {indexing-task: {VARIANT: TASK}})")
    try:
        output.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ConfigError(f"--output {output}: cannot create it: {e.strerror or e}") from None


def _write_pages(output: Path, texts: dict[str, str | None],
                 old_texts: dict[str, str]) -> tuple[list[str], int, dict[str, str], list[str]]:
    """Write the pages whose text changed, remove those no longer made; returns (written, unchanged count, each
    page's digest for the manifest, removed)."""
    written, unchanged = [], 0
    new_texts: dict[str, str] = {}
    for path, text in texts.items():
        if text is None:
            new_texts[path] = old_texts.get(path, "")
            unchanged += 1
            continue
        digest = _digest(text)
        new_texts[path] = digest
        if old_texts.get(path) == digest and (output / path).is_file():
            unchanged += 1
            continue
        _write(output / path, text)
        written.append(path)
    removed = sorted(p for p in old_texts if p not in texts)
    for p in removed:
        (output / p).unlink(missing_ok=True)
    return written, unchanged, new_texts, removed


def _entry(exp: ExperimentFile, index: int) -> str:
    return f", track entry {index}" if len(exp.track_entries()) > 1 else ""
