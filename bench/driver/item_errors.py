"""The failed items of a bulk answer, grouped by kind within the bulk, and the text a sample carries for them.

A sample has one ``error`` text. A bulk whose items failed in several ways (a date field and a long field both
conflicting with the mapping) carries every kind in it, one line each with its count, so that the summary can
count documents per kind over all bulks (``parse_item_failures``) instead of naming only the first item's error.
"""

from __future__ import annotations

import re
from typing import Any

from bench.driver.missing_feature import explain

# Where a bulk item's reason turns to the one document ("... in document with id 'x'. Preview of field's value:
# 'y'"): cut there, the rest of a kind's reason (type, field, field type) is the same for every document of it.
_PER_DOCUMENT = " with id "
MAX_ITEM_KINDS = 20  # kinds of item error named per bulk; the documents of any others are counted together
HEAD = " documents failed, by kind:"
_HEAD = re.compile(r"(\d+) of (\d+)" + re.escape(HEAD))
_KIND = re.compile(r"  (\d+)× (.*)")


def error_reason(err: dict[str, Any]) -> str:
    """``type: reason``, and the innermost ``caused_by`` when it says something else: an engine wraps what it
    could not parse ("failed to parse field [template]") around the cause ("unknown field [lifecycle]")."""
    text = f"{err.get('type')}: {err.get('reason')}"
    inner, depth = err.get("caused_by"), 0
    while isinstance(inner, dict) and isinstance(inner.get("caused_by"), dict) and depth < 10:
        inner, depth = inner["caused_by"], depth + 1
    if isinstance(inner, dict) and inner.get("reason") and str(inner.get("reason")) not in text:
        text += f" (caused by {inner.get('type')}: {inner.get('reason')})"
    return text


def item_failures(items: list[Any]) -> tuple[int, list[tuple[int, str]]]:
    """The failed items of a bulk answer: how many, and per kind (error type and reason up to the document's id,
    without a leading position or id in brackets) the count and one example message, most frequent first. Only
    string slicing per item: a bulk whose thousands of items all failed costs about what parsing its answer did
    (the summary then merges kinds across bulks by ``bench.results.summary.error_kind``)."""
    kinds: dict[tuple[Any, str], list[Any]] = {}  # key -> [count, first error]
    failed = 0
    for item in items:
        f = next(iter(item.values()), None) if isinstance(item, dict) else None
        if not isinstance(f, dict) or "error" not in f:
            continue
        failed += 1
        err = f["error"]
        if isinstance(err, dict):
            reason = str(err.get("reason"))
            cut = reason.find(_PER_DOCUMENT)
            if cut >= 0:
                reason = reason[:cut]
            if reason.startswith("["):  # "[1:27] failed to parse ...", "[id]: version conflict ..."
                reason = reason[reason.find("]") + 1:]
            key: tuple[Any, str] = (err.get("type"), reason)
        else:
            key = (None, str(err)[:200])
        kind = kinds.get(key)
        if kind is None:
            kinds[key] = [1, err]
        else:
            kind[0] += 1
    ranked = sorted(kinds.values(), key=lambda k: -k[0])
    # Each kind says what the cluster lacks on its own (a pipeline missing is not the other kinds' cause).
    out = [(n, explain((error_reason(e) if isinstance(e, dict) else str(e)).replace("\n", " ")))
           for n, e in ranked[:MAX_ITEM_KINDS]]
    rest = sum(n for n, _ in ranked[MAX_ITEM_KINDS:])
    if rest:
        out.append((rest, f"{len(ranked) - MAX_ITEM_KINDS} other kinds of item error"))
    return failed, out


def item_failures_text(failed: int, docs: int, kinds: list[tuple[int, str]]) -> str:
    """``N of M documents failed, by kind:`` and a line ``  K× message`` per kind."""
    return f"{failed} of {docs}{HEAD}" + "".join(f"\n  {n}× {m}" for n, m in kinds)


def parse_item_failures(text: str) -> list[tuple[int, str]] | None:
    """The (documents, example message) of each kind in a sample's error text written by ``item_failures_text``
    (whatever precedes its first line, such as what the cluster lacks, stays in front of each message); None for
    any other text (other failures, and bulks stored before kinds were kept, which named only their first item)."""
    head = _HEAD.search(text)
    if head is None:
        return None
    prefix = text[:head.start()]
    kinds = []
    for line in text[head.end():].split("\n"):
        m = _KIND.fullmatch(line)
        if m is not None:
            kinds.append((int(m.group(1)), prefix + m.group(2)))
    return kinds or None
