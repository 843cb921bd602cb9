"""``bench add annotation``, ``bench list annotations``, ``bench delete annotation``: Rally's commands and flags.

Annotations are written to the local store and, when a metrics store is configured, to its
``<prefix>-annotations`` index too; listing and the history site read both (the store's copy wins for an id in
both), so a machine with an empty ``BENCH_HOME`` sees what another one added."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from bench.trials.annotations import CHART_TYPES, Annotation, at_midnight, parse_day, select
from bench.trials.metrics_store.config import configured_store
from bench.trials.sqlite import TrialStore
from bench.util.errors import ConfigError

Say = Callable[[str], None]


def add_annotation_parsers(sub: Any) -> None:
    add = sub.add_parser("add", help="add records: an annotation (a message shown on the history site's charts)")
    add.add_argument("configuration", choices=["annotation"], help="what to add")
    add.add_argument("--race-timestamp", required=True,
                     help="the night it belongs to: a race timestamp (20261124T013000Z) or a day (20261124); "
                          "it is pinned to midnight UTC of that day, as Rally does")
    add.add_argument("--message", required=True, help="annotation message")
    add.add_argument("--track", help="only this track's charts (default: every track)")
    add.add_argument("--chart-type", choices=CHART_TYPES,
                     help="only charts of this type (bench draws: indexing, io, stats; default: every chart)")
    add.add_argument("--chart-name", help="only the chart of this name, e.g. 'Median Throughput (indexing)'")
    add.add_argument("--dry-run", action="store_true", help="say what would be added, add nothing")


def _environment() -> str:
    config = configured_store()
    return config.environment if config is not None else "local"


def _remote() -> Any:
    from bench.trials.metrics_store.annotations import StoreAnnotations

    config = configured_store()
    return StoreAnnotations(config) if config is not None else None


def add_annotation(a: argparse.Namespace, say: Say) -> int:
    message = (a.message or "").strip()
    if not message:
        raise ConfigError("--message is empty: say what changed, e.g. --message='JDK 21 -> 25'")
    ann = Annotation(environment=_environment(), race_timestamp=at_midnight(a.race_timestamp), track=a.track or None,
                     chart=a.chart_type or None, chart_name=a.chart_name or None, message=message)
    where = f"environment=[{ann.environment}], race timestamp=[{ann.race_timestamp}], track=[{ann.track}], " \
            f"chart type=[{ann.chart}], chart name=[{ann.chart_name}]"
    if a.dry_run:
        say(f"Would add annotation with message [{message}] for {where}")
        return 0
    remote = _remote()
    with TrialStore() as store:
        store.add_annotation(ann)
    if remote is not None:
        try:
            remote.add(ann)
        finally:
            remote.close()
    say(f"Successfully added annotation [{ann.id}]" + (" (local store and metrics store)." if remote else "."))
    return 0


def all_annotations(environment: str | None = None) -> list[Annotation]:
    """The local store's annotations and the metrics store's (when configured), each id once."""
    with TrialStore() as store:
        found = {a.id: a for a in store.annotations()}
    remote = _remote()
    if remote is not None:
        try:
            found.update({a.id: a for a in remote.list()})
        finally:
            remote.close()
    env = environment if environment is not None else _environment()
    return [a for a in found.values() if a.environment == env]


def list_annotations(a: argparse.Namespace, say: Say) -> int:
    from tabulate import tabulate

    rows = select(all_annotations(), track=a.track, from_date=parse_day(a.from_date, "--from-date"),
                  to_date=parse_day(a.to_date, "--to-date"))[: a.limit]
    if not rows:
        say(f"No annotations found in environment [{_environment()}].")
        return 0
    say(tabulate([[x.id, x.race_timestamp, x.track or "", x.chart or "", x.chart_name or "", x.message] for x in rows],
                 headers=["Annotation Id", "Timestamp", "Track", "Chart Type", "Chart Name", "Message"]))
    return 0


def delete_annotations(a: argparse.Namespace, say: Say) -> int:
    ids = [i.strip() for i in (a.id or "").split(",") if i.strip()]
    if not ids:
        raise ConfigError("--id is empty: give annotation ids, separated by commas (see 'bench list annotations')")
    env = _environment()
    if a.dry_run:
        say(f"Would delete annotation with id [{ids[0]}] in environment [{env}]." if len(ids) == 1 else
            f"Would delete {len(ids)} annotations: {ids} in environment [{env}].")
        return 0
    remote = _remote()
    missing = 0
    try:
        with TrialStore() as store:
            for annotation_id in ids:
                deleted = store.delete_annotation(annotation_id)
                if remote is not None:
                    deleted = remote.delete(annotation_id) or deleted
                if deleted:
                    say(f"Successfully deleted [{annotation_id}].")
                else:
                    missing += 1
                    say(f"Did not find [{annotation_id}] in environment [{env}].")
    finally:
        if remote is not None:
            remote.close()
    return 1 if missing else 0
