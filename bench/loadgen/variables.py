"""INFINI Loadgen's template variables, generated column-wise.

Semantics follow Loadgen (``domain.go``: ``buildVariableValue``): ``file``/``list`` pick a random line,
``sequence``/``sequence64`` count up from ``from`` (first value ``from + 1``) and wrap to 0 after ``to``,
``range`` is uniform in ``[from, to]``, ``uuid`` is Loadgen's ``util.GetUUID()`` shape (a 20-character
xid: base32hex, time-ordered, unique), ``now_*`` are the current time, ``random_array`` joins ``size``
values of another variable, ``replace`` rewrites every value. An unknown name renders ``not_found``.

Speed: a bulk of N templated lines asks each variable for N values at once (``column(n)``), so numbers
and picks come from numpy and no per-document Python object is built beyond the value itself.
"""

from __future__ import annotations

import base64
import os
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from bench.util.errors import ConfigError

NOT_FOUND = "not_found"  # what Loadgen renders for a name that is no variable
TIME_TYPES = frozenset({"now_local", "now_utc", "now_utc_lite", "now_unix", "now_unix_in_ms", "now_unix_in_micro",
                        "now_unix_in_nano", "now_with_format"})
TYPES = frozenset({"file", "list", "sequence", "sequence64", "range", "uuid", "random_array"}) | TIME_TYPES
_MAX32, _MAX64 = (1 << 31) - 1, (1 << 63) - 1


class VariableSpec(BaseModel):
    """One entry of Loadgen's ``variables`` list (its YAML keys)."""

    model_config = ConfigDict(extra="forbid")
    name: str
    type: str
    path: str | None = None
    data: list[Any] = Field(default_factory=list)
    format: str | None = None
    from_: int = Field(default=0, alias="from", ge=0)
    to: int = Field(default=0, ge=0)
    replace: dict[str, str] = Field(default_factory=dict)
    size: int = 0
    variable_key: str | None = None
    variable_type: str | None = None  # "number" or "string"
    square_bracket: bool = False
    string_bracket: str | None = None


# ------------------------------------------------------------------ Go time layouts

_ZERO = timedelta(0)

# Go's reference time is Mon Jan 2 15:04:05 MST 2006; longest tokens first so "2006" wins over "2".
_GO_TOKENS: list[tuple[str, Callable[[datetime], str]]] = [
    ("January", lambda d: d.strftime("%B")), ("Monday", lambda d: d.strftime("%A")),
    ("Z07:00", lambda d: "Z" if d.utcoffset() == _ZERO else _offset(d, ":")),
    ("Z0700", lambda d: "Z" if d.utcoffset() == _ZERO else _offset(d, "")),
    ("-07:00", lambda d: _offset(d, ":")), ("-0700", lambda d: _offset(d, "")), ("-07", lambda d: _offset(d, "")[:3]),
    ("2006", lambda d: f"{d.year:04d}"), ("Jan", lambda d: d.strftime("%b")), ("Mon", lambda d: d.strftime("%a")),
    ("MST", lambda d: d.tzname() or _offset(d, "")), ("002", lambda d: f"{d.timetuple().tm_yday:03d}"),
    ("_2", lambda d: f"{d.day:2d}"), ("01", lambda d: f"{d.month:02d}"), ("02", lambda d: f"{d.day:02d}"),
    ("03", lambda d: f"{(d.hour % 12) or 12:02d}"), ("04", lambda d: f"{d.minute:02d}"),
    ("05", lambda d: f"{d.second:02d}"), ("06", lambda d: f"{d.year % 100:02d}"), ("15", lambda d: f"{d.hour:02d}"),
    ("PM", lambda d: "PM" if d.hour >= 12 else "AM"), ("pm", lambda d: "pm" if d.hour >= 12 else "am"),
    ("1", lambda d: str(d.month)), ("2", lambda d: str(d.day)), ("3", lambda d: str((d.hour % 12) or 12)),
    ("4", lambda d: str(d.minute)), ("5", lambda d: str(d.second)),
]


def _offset(d: datetime, sep: str) -> str:
    off = d.utcoffset() or _ZERO
    minutes = int(off.total_seconds() // 60)
    sign = "-" if minutes < 0 else "+"
    minutes = abs(minutes)
    return f"{sign}{minutes // 60:02d}{sep}{minutes % 60:02d}"


def _fraction(digits: int, trim: bool, sep: str) -> Callable[[datetime], str]:
    def f(d: datetime) -> str:
        frac = f"{d.microsecond:06d}000"[:digits]
        if trim:
            frac = frac.rstrip("0")
            return sep + frac if frac else ""
        return sep + frac
    return f


def _literal(c: str) -> Callable[[datetime], str]:
    return lambda d: c


def go_layout(layout: str) -> Callable[[datetime], str]:
    """Compile a Go time layout (e.g. ``2006-01-02T15:04:05-0700``) into a formatter of aware datetimes."""
    parts: list[Callable[[datetime], str]] = []
    i = 0
    while i < len(layout):
        ch = layout[i]
        # fractional seconds: ".000"/",000" fixed, ".999" trimmed (only right after a seconds field in Go;
        # accepted anywhere here)
        if ch in ".," and i + 1 < len(layout) and layout[i + 1] in "09":
            j = i + 1
            while j < len(layout) and layout[j] == layout[i + 1]:
                j += 1
            if j >= len(layout) or not layout[j].isdigit():
                parts.append(_fraction(j - i - 1, layout[i + 1] == "9", ch))
                i = j
                continue
        for tok, fn in _GO_TOKENS:
            if layout.startswith(tok, i):
                parts.append(fn)
                i += len(tok)
                break
        else:
            parts.append(_literal(ch))
            i += 1
    return lambda d: "".join(p(d) for p in parts)


def go_time_string(d: datetime) -> str:
    """Go's ``time.Time.String()``: ``2006-01-02 15:04:05.999999999 -0700 MST`` (fraction trimmed)."""
    frac = f"{d.microsecond:06d}000".rstrip("0")
    name = "UTC" if d.utcoffset() == _ZERO and d.tzinfo is UTC else (d.tzname() or _offset(d, ""))
    return f"{d:%Y-%m-%d %H:%M:%S}{'.' + frac if frac else ''} {_offset(d, '')} {name}"


# ------------------------------------------------------------------ uuid (xid)

_B32HEX = "0123456789abcdefghijklmnopqrstuv"


def _xid_prefix() -> bytes:
    """4 bytes time + 5 random bytes (xid's machine id + pid, randomised so processes never collide)."""
    return int(time.time()).to_bytes(4, "big") + os.urandom(5)


def _xid(raw12: bytes) -> str:
    return base64.b32hexencode(raw12).decode("ascii").lower()[:20]


_PAIRS = [a + b for a in _B32HEX for b in _B32HEX]  # 10 bits -> 2 characters


class _Xids:
    """Unique 20-character ids shaped like Loadgen's (xid): 9 prefix bytes + a 3-byte counter, base32hex.

    The first 14 characters (70 bits) depend only on the prefix and are encoded once; the last 6 encode the
    prefix's 2 remaining bits, the counter and 4 padding bits, through a 1,024-entry table.
    """

    def __init__(self) -> None:
        self._new_prefix()
        self._counter = int.from_bytes(os.urandom(3), "big")

    def _new_prefix(self) -> None:
        raw = _xid_prefix() + b"\0\0\0"
        self._head = _xid(raw)[:14]
        self._tail_bits = (raw[8] & 3) << 28
        self._used = 0

    def take(self, n: int) -> list[str]:
        out: list[str] = []
        pairs = _PAIRS
        while n > 0:
            if self._used >= 1 << 24:  # counter space of this prefix used up: a new prefix
                self._new_prefix()
            k = min(n, (1 << 24) - self._used)
            head, tb, start = self._head, self._tail_bits, self._counter
            vals = ((start + np.arange(k, dtype=np.int64)) & 0xFFFFFF) << 4 | tb
            out.extend([head + pairs[v >> 20] + pairs[(v >> 10) & 1023] + pairs[v & 1023] for v in vals.tolist()])
            self._counter = (start + k) & 0xFFFFFF
            self._used += k
            n -= k
        return out


# ------------------------------------------------------------------ variables


class Variables:
    """All variables of a config; ``column(name, n)`` gives ``n`` fresh values of one variable."""

    def __init__(self, specs: list[VariableSpec], *, base_dir: Path, seed: int | None = None,
                 where: str = "variables") -> None:
        self.specs: dict[str, VariableSpec] = {}
        self._rng = np.random.default_rng(seed)
        self._dicts: dict[str, np.ndarray] = {}
        self._seq: dict[str, int] = {}
        self._xids = _Xids()
        self._formats: dict[str, Callable[[datetime], str]] = {}
        for i, s in enumerate(specs):
            at = f"{where}[{i}] ({s.name})"
            if s.name in self.specs:
                raise ConfigError(f"{at}: variable '{s.name}' is defined twice")
            if s.type not in TYPES:
                raise ConfigError(f"{at}: unsupported variable type '{s.type}': use one of {', '.join(sorted(TYPES))}")
            self.specs[s.name] = s
            if s.type in ("file", "list"):
                lines: list[str] = []
                if s.path:
                    p = Path(s.path) if Path(s.path).is_absolute() else base_dir / s.path
                    if not p.is_file():
                        raise ConfigError(f"{at}: file {p} not found: fix 'path' (relative to the config file)")
                    lines = [ln.strip() for ln in p.read_text(encoding="utf-8").splitlines() if ln.strip()]
                lines += [str(v).strip() for v in s.data if str(v).strip()]
                if not lines:
                    raise ConfigError(f"{at}: no values: give 'path' (one value per line) or 'data'")
                self._dicts[s.name] = np.array(lines, dtype=object)
            elif s.type in ("sequence", "sequence64"):
                self._seq[s.name] = s.from_
            elif s.type == "range":
                if s.to < s.from_:
                    raise ConfigError(f"{at}: range needs from <= to, got from={s.from_} to={s.to}")
            elif s.type == "now_with_format":
                if not s.format:
                    raise ConfigError(f"{at}: now_with_format needs 'format' (a Go layout such as "
                                      f"2006-01-02T15:04:05-0700)")
                self._formats[s.name] = go_layout(s.format)
            elif s.type == "random_array" and (not s.variable_key or s.size < 0):
                raise ConfigError(f"{at}: random_array needs 'variable_key' and 'size'")
        for s in self.specs.values():
            if s.type == "random_array" and s.variable_key not in self.specs:
                raise ConfigError(f"{where} ({s.name}): variable_key '{s.variable_key}' names no variable")

    def sequence_state(self) -> dict[str, int]:
        """Where each sequence stands (to continue it in another process, e.g. after the warmup)."""
        return dict(self._seq)

    def restore_sequences(self, state: dict[str, int]) -> None:
        for name, value in state.items():
            if name in self._seq:
                self._seq[name] = int(value)

    def is_time(self, name: str) -> bool:
        s = self.specs.get(name)
        return s is not None and s.type in TIME_TYPES

    def value(self, name: str) -> str:
        return self.column(name, 1)[0]

    def column(self, name: str, n: int) -> list[Any]:
        """``n`` values of variable ``name`` (str or int; both render the same through str.format)."""
        s = self.specs.get(name)
        if s is None:
            return [NOT_FOUND] * n
        values = self._raw(s, n)
        if s.replace:
            values = [_replace(str(v), s.replace) for v in values]
        return values

    def _raw(self, s: VariableSpec, n: int) -> list[Any]:
        t = s.type
        if t in ("file", "list"):
            d = self._dicts[s.name]
            if len(d) == 1:
                return [d[0]] * n
            return d[self._rng.integers(0, len(d), n)].tolist()
        if t == "range":
            return self._rng.integers(s.from_, s.to + 1, n).tolist()
        if t in ("sequence", "sequence64"):
            top = s.to if s.to > 0 else (_MAX32 if t == "sequence" else _MAX64)
            cur = self._seq[s.name]
            if cur + n <= top:
                self._seq[s.name] = cur + n
                return list(range(cur + 1, cur + n + 1))
            out: list[int] = []
            for _ in range(n):  # Loadgen: at the top, answer 0 and start again from 0
                if cur >= top:
                    cur = 0
                    out.append(0)
                else:
                    cur += 1
                    out.append(cur)
            self._seq[s.name] = cur
            return out
        if t == "uuid":
            return self._xids.take(n)
        if t in TIME_TYPES:
            return [self._now(s)] * n  # one clock reading per request: lines of one body are microseconds apart
        if t == "random_array":
            src = self.column(s.variable_key or "", n * s.size) if s.size else []
            q = (s.string_bracket if s.string_bracket is not None else '"') if s.variable_type == "string" else ""
            arrays: list[str] = []
            for k in range(n):
                items = ",".join(f"{q}{v}{q}" for v in src[k * s.size:(k + 1) * s.size])
                arrays.append(f"[{items}]" if s.square_bracket else items)
            return arrays
        raise ConfigError(f"variable '{s.name}': unsupported type '{t}'")  # pragma: no cover - checked above

    def _now(self, s: VariableSpec) -> str | int:
        ns = time.time_ns()
        t = s.type
        if t == "now_unix":
            return ns // 1_000_000_000
        if t == "now_unix_in_ms":
            return ns // 1_000_000
        if t == "now_unix_in_micro":
            return ns // 1000
        if t == "now_unix_in_nano":
            return ns
        utc = datetime.fromtimestamp(ns / 1e9, tz=UTC)
        if t == "now_utc":
            return go_time_string(utc)
        if t == "now_utc_lite":
            return f"{utc:%Y-%m-%dT%H:%M:%S}.{utc.microsecond // 1000:03d}"
        local = utc.astimezone()
        if t == "now_local":
            return go_time_string(local)
        return self._formats[s.name](local)


def _replace(v: str, pairs: dict[str, str]) -> str:
    for a, b in pairs.items():
        v = v.replace(a, b)
    return v
