"""Parse ``k:v,k2:v2`` option strings (or a JSON file) into typed parameters.

Used for --track-params and reused for --car-params, --telemetry-params and --client-options.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.errors import ConfigError


def parse_value(raw: str) -> Any:
    """A value typed the way a Rally user expects: JSON when it parses (numbers, bools, null, lists,
    objects, quoted strings), ``True``/``False`` as bools, otherwise the plain string."""
    text = raw.strip()
    if text in ("True", "False"):
        return text == "True"
    try:
        return json.loads(text)
    except ValueError:
        return text


def _split_pairs(spec: str) -> list[str]:
    """Split at commas that are not inside brackets or quotes, so ``k:[1,2],j:{"a":1}`` works."""
    parts, depth, quote, cur = [], 0, "", []
    for ch in spec:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
            continue
        cur.append(ch)
    parts.append("".join(cur))
    return [p for p in (x.strip() for x in parts) if p]


def _load_file(path: Path, what: str) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise ConfigError(
            f"{what}: file {path} is not valid JSON at line {e.lineno} column {e.colno}: {e.msg}"
        ) from None
    except OSError as e:
        raise ConfigError(f"{what}: cannot read {path}: {e.strerror}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{what}: file {path} must hold a JSON object, got {type(data).__name__}")
    return data


def parse_params(spec: str | None, *, what: str = "track params") -> dict[str, Any]:
    """``"k:v,k2:v2"`` or the path of a JSON file holding an object; None or "" gives {}."""
    if spec is None or not spec.strip():
        return {}
    spec = spec.strip()
    candidate = Path(spec).expanduser()
    if spec.endswith(".json") or (":" not in spec and candidate.is_file()):
        if not candidate.is_file():
            raise ConfigError(
                f"{what}: file {candidate} does not exist: pass an existing JSON file or k:v,k2:v2"
            )
        return _load_file(candidate, what)
    out: dict[str, Any] = {}
    for pair in _split_pairs(spec):
        key, sep, value = pair.partition(":")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(
                f"{what}: '{pair}' is not key:value; write them as k1:v1,k2:v2 or pass a JSON file"
            )
        out[key] = parse_value(value)
    return out
