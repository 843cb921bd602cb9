"""How numbers read in reports: never scientific notation, sizes in the unit their magnitude calls for.

Sizes in bench's summaries are binary (MB = 1024², GB = 1024³, as Rally's reports); a size or rate of a size
is rescaled to B/kB/MB/GB/TB by magnitude so that 0.000128 MB reads 134 B and 5,120 MB reads 5.00 GB.
"""

from __future__ import annotations

import math

_SIZES = ["B", "kB", "MB", "GB", "TB"]
_FACTOR = {u: 1024 ** i for i, u in enumerate(_SIZES)}


def rescale(value: float, unit: str) -> tuple[float, str]:
    """A size (B … TB) or size rate (MB/s …) in the unit its magnitude calls for; other units unchanged."""
    base, slash, rest = unit.partition("/")
    if base not in _FACTOR or isinstance(value, bool) or not math.isfinite(value) or value == 0:
        return value, unit
    size = abs(value) * _FACTOR[base]
    for u in reversed(_SIZES):
        if size >= _FACTOR[u] or u == "B":
            return value * _FACTOR[base] / _FACTOR[u], u + slash + rest
    return value, unit  # pragma: no cover (the loop always returns)


BOOL_UNIT = "bool"  # a yes/no row (stored as 1 or 0): shown as yes/no, never as a number with a unit


def yes_no(values: list[float]) -> str:
    """yes, no, or for trials that disagree ``yes in 1 of 2``."""
    if not values:
        return ""
    yes = sum(1 for v in values if v)
    return "yes" if yes == len(values) else "no" if yes == 0 else f"yes in {yes} of {len(values)}"


def value_text(value: float | int, unit: str, text: str | None = None) -> tuple[str, str]:
    """(value, unit) as a reader sees them: ``yes``/``no`` and no unit for a yes/no row, else ``text`` (the number
    as the caller formats it) and the unit."""
    if unit == BOOL_UNIT:
        return yes_no([value]), ""
    return (plain(value) if text is None else text), unit


def plain(v: float | int, decimals: int = 2) -> str:
    """Thousands separators, ``decimals`` places; a small non-zero value gets the places to show three
    significant digits (0.000028, not 2.8e-05 or 0.00)."""
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, int):
        return f"{v:,}"
    if math.isnan(v) or math.isinf(v):
        return str(v)
    if v != 0 and abs(v) < 10 ** -decimals:
        places = min(12, -math.floor(math.log10(abs(v))) + 2)
        return f"{v:,.{places}f}"
    return f"{v:,.{decimals}f}"


def compact(v: float | int) -> str:
    """Fewer places the bigger the number (headline cells): 42,512 · 87.3 · 2.41 · 0.0031."""
    if isinstance(v, bool) or isinstance(v, int):
        return plain(v)
    a = abs(v)
    if a >= 100 or a == 0:
        return f"{v:,.0f}"
    if a >= 10:
        return f"{v:,.1f}"
    return plain(v, 2)


def percent(v: float, decimals: int | None = None) -> str:
    """A percentage (already times 100) that never reads 0, or rounds to a place, when it is not: below 1 it keeps
    three significant digits (10 failures in 73,786 requests are 0.0136, not 0.0 or 0.01); from 1 up ``decimals``
    places, or ``compact``'s."""
    if v != 0 and abs(v) < 1 and math.isfinite(v):
        places = -math.floor(math.log10(abs(v))) + 2
        return f"{v:.{places}f}"
    return compact(v) if decimals is None else f"{v:,.{decimals}f}"
