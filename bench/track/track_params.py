"""Parse ``k:v,k2:v2`` option strings (or a JSON file) into typed parameters.

Used for --track-params and reused for --car-params, --telemetry-params and --client-options.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from bench.util.errors import ConfigError


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
    parts: list[str] = []
    cur: list[str] = []
    depth, quote = 0, ""
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


def blame_param(line: str, column: int, params: dict[str, Any]) -> str | None:
    """Which track parameter broke a rendered JSON ``line`` (the error at 1-based ``column``), as one sentence
    naming it and its value, or None when the error is not inside a parameter's rendered text.

    A parameter breaks the JSON when Jinja2 writes it as Python text: a word where a number belongs
    (``doc_count:abc`` gives ``"document-count": abc``), ``True``, a list with single quotes, or a string with a
    quote inside quotes."""
    found: tuple[str, str] | None = None
    for name, value in params.items():
        if callable(value) or (isinstance(value, (int, float)) and not isinstance(value, bool)
                               and math.isfinite(value)):
            continue  # numbers render as valid JSON; Jinja2's own globals are functions
        text = str(value)
        at = line.find(text) if text else -1
        while at >= 0:
            if at <= column - 1 <= at + len(text):  # the parser stopped inside this parameter's text
                found = (name, text)
                break
            at = line.find(text, at + 1)
        if found:
            break
    if found is None:
        return None
    name, text = found
    value = params[name]
    key = re.search(r'"([^"]+)"\s*:\s*"?[^"]*' + re.escape(text), line)
    used = f"as \"{key.group(1)}\"" if key else "in its JSON"
    given = value if isinstance(value, str) else json.dumps(value)
    start = line.find(text)
    if start > 0 and line[start - 1] == '"':
        why = "the value breaks the JSON string it is written into (a quote or backslash inside it)"
    elif isinstance(value, bool) or isinstance(value, (list, dict)):
        why = f"Jinja2 writes it as Python's {text}, which is not JSON (the track could write {{{{ {name} | tojson }}}})"
    else:
        why = f"a number, true/false or a JSON list/object is needed, and {text} is none of these"
    from bench.track.notices import params_flag

    return f"{params_flag()} {name}:{given}: the track uses {name} {used}; {why}"
