"""Turn what the user typed into sides of a comparison, reading the trial store.

Selectors:
- ``3f2a9c`` -- one trial by id or unique prefix;
- ``3f2a9c,77b01e,c0ffee`` -- a group of trials by id;
- ``tag:variant=ccr`` or ``tag:variant=ccr,experiment-run=20240101`` -- every *complete* stored trial whose
  user tags match all the given pairs (repeated runs of one configuration).

A trial whose run completed but had failed requests ("complete, with errors") is complete here: tag groups
select it, and ``compare`` puts its errors up front and marks every row of the task that had them.
"""

from __future__ import annotations

from bench.compare.core import Side, TrialData
from bench.trials.model import ALL_TRIALS, TrialInfo, TrialReader
from bench.trials.races import one_per_race
from bench.trials.summary import stored_summary
from bench.util.errors import ConfigError, StoreError


def parse_tag_selector(selector: str) -> dict[str, str]:
    """``tag:k=v,k2=v2`` (each pair may repeat the ``tag:`` prefix) -> {k: v, k2: v2}."""
    body = selector.strip()
    if not body.startswith("tag:"):
        raise ConfigError(f"{selector!r} is not a tag selector: write tag:KEY=VALUE[,KEY=VALUE]")
    tags: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in body.split(","))):
        part = part.removeprefix("tag:")
        k, sep, v = part.partition("=")
        if not sep or not k.strip():
            raise ConfigError(f"tag selector {selector!r}: '{part}' is not KEY=VALUE (e.g. tag:variant=baseline)")
        tags[k.strip()] = v.strip()
    return tags


def still_running(info: TrialInfo) -> str:
    """A compared trial whose race is still running (a store marks a running trial whose bench is gone
    interrupted when it is opened): its numbers would be those of a race half run."""
    by = f" by bench pid {info.pid}" if info.pid else ""
    return (f"trial {info.id} is still running{by} (started {info.start_time:%Y-%m-%d %H:%M:%S} UTC): wait for its "
            "race to end, then compare it; a comparison now would judge a race half run")


def load_trial(store: TrialReader, info: TrialInfo) -> TrialData:
    """A trial with its summary; recomputed from the stored samples (and sections from the stored telemetry
    and the like) when none was stored."""
    return TrialData(info=info, summary=stored_summary(store, info.id))


def matching_trials(store: TrialReader, tags: dict[str, str]) -> list[TrialInfo]:
    """All trials with these user tags, oldest first."""
    found = [t for t in store.list_trials(ALL_TRIALS) if all(t.user_tags.get(k) == v for k, v in tags.items())]
    return sorted(found, key=lambda t: t.start_time)


def resolve_side(store: TrialReader, selector: str, label: str | None = None) -> tuple[Side, list[str]]:
    """The side a selector names, and notes about trials it left out."""
    sel = selector.strip()
    if not sel:
        raise ConfigError("empty trial selector: give a trial id, id1,id2,... or tag:KEY=VALUE")
    notes: list[str] = []
    if sel.startswith("tag:"):
        tags = parse_tag_selector(sel)
        all_matches = matching_trials(store, tags)
        infos = [t for t in all_matches if t.status == "complete"]
        running = [t for t in all_matches if t.status == "running"]
        unreadable = [d.id[:8] for d in store.damaged if all(d.user_tags.get(k) == v for k, v in tags.items())]
        if unreadable:
            notes.append(f"{label or ','.join(tags.values())}: {len(unreadable)} matching trial(s) cannot be read "
                         f"({', '.join(unreadable)}: see bench's log) and are left out.")
        skipped = len(all_matches) - len(infos) - len(running)
        default_label = ",".join(tags.values())
        if running:
            notes.append(f"{label or default_label}: {len(running)} matching trial(s) still running "
                         f"({', '.join(t.id[:8] for t in running)}) are left out: compare again when they end.")
        if skipped:
            notes.append(f"{label or default_label}: {skipped} matching trial(s) did not complete and are left out.")
        infos, repeated = one_per_race(infos)  # an experiment's race counts once, however often it was stored
        notes += repeated
        if not infos:
            what = (f" ({len(all_matches)} matched: {len(running)} still running, {skipped} did not complete)"
                    if running else f" ({len(all_matches)} matched but none completed)" if all_matches else "")
            raise StoreError(f"no complete trial has the user tags {sel.removeprefix('tag:')}{what}: "
                             + ("wait for the running race(s) to end" if running else "see 'bench list trials'"))
    else:
        ids = [p.strip() for p in sel.split(",") if p.strip()]
        infos = [store.get_trial(i) for i in ids]
        for info in infos:
            if info.status == "running":
                raise StoreError(still_running(info))
        if len({i.id for i in infos}) != len(infos):
            raise ConfigError(f"{selector!r} names the same trial twice")
        default_label = infos[0].id[:8] if len(infos) == 1 else f"{len(infos)} trials ({infos[0].id[:8]}, ...)"
    return Side(label=label or default_label, selector=sel,
                trials=[load_trial(store, i) for i in infos]), notes


def resolve_sides(store: TrialReader, baseline: str, candidates: list[str],
                  labels: list[str] | None = None) -> tuple[Side, list[Side], list[str]]:
    """Sides of a comparison; ``labels`` (baseline first) replace the labels derived from the selectors."""
    if not candidates:
        raise ConfigError("bench compare needs a baseline and at least one candidate")
    names = list(labels or []) + [None] * (1 + len(candidates))
    base, notes = resolve_side(store, baseline, names[0])
    cands = []
    for i, c in enumerate(candidates, 1):
        side, n = resolve_side(store, c, names[i])
        cands.append(side)
        notes += n
    labels = [base.label, *[c.label for c in cands]]
    if len(set(labels)) != len(labels):  # e.g. the same tag value under different keys
        for i, s in enumerate([base, *cands]):
            s.label = f"{s.label} [{i}]" if labels.count(s.label) > 1 else s.label
    shared = set(base.ids).intersection(*[set(c.ids) for c in cands]) if cands else set()
    if shared:
        notes.append(f"Trial(s) {', '.join(sorted(i[:8] for i in shared))} are on both sides.")
    return base, cands, notes
