"""Keep secrets out of logs, stored trials and reports.

Secrets are registered once (when client options are parsed or a password is generated) and then
scrubbed from every log record and from anything written to the store or a report.
"""

from __future__ import annotations

import logging
import re
from typing import Any

MASK = "*****"
_SECRETS: set[str] = set()
# Option and setting names whose values are secrets wherever they appear.
_SECRET_KEY = re.compile(r"(pass(word)?|api[_-]?key|token|secret|credential|authorization)", re.I)
# user:password@ in URLs.
_URL_USERINFO = re.compile(r"(?P<scheme>[a-z][a-z0-9+.-]*://)(?P<user>[^:/@\s]+):(?P<pw>[^@/\s]+)@", re.I)


_pattern: re.Pattern[str] | None = None


def register_secret(value: str | None) -> None:
    global _pattern
    if value and len(value) >= 3 and value not in _SECRETS:
        _SECRETS.add(value)
        # Whole tokens only: a password "elastic" must not turn "elasticsearch" into "*****search".
        # Longest first, so a secret containing another is masked whole.
        alternatives = "|".join(re.escape(x) for x in sorted(_SECRETS, key=len, reverse=True))
        _pattern = re.compile(rf"(?<![A-Za-z0-9])(?:{alternatives})(?![A-Za-z0-9])")


def is_secret_key(key: str) -> bool:
    return bool(_SECRET_KEY.search(key))


def redact_text(text: str) -> str:
    if _pattern is not None:
        text = _pattern.sub(MASK, text)
    return _URL_USERINFO.sub(lambda m: f"{m['scheme']}{m['user']}:{MASK}@", text)


def redact(obj: Any) -> Any:
    """A copy of obj (dicts, lists, strings) with secret keys masked and known secrets scrubbed."""
    if isinstance(obj, dict):
        return {k: (MASK if isinstance(k, str) and is_secret_key(k) and v not in (None, "") else redact(v))
                for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(redact(v) for v in obj)
    if isinstance(obj, str):
        return redact_text(obj)
    return obj


class RedactingFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        msg = record.getMessage()
        clean = redact_text(msg)
        if clean != msg:
            record.msg, record.args = clean, None
        return True


def install_log_filter() -> None:
    """Attach the filter to every handler of the root logger (call after handlers exist)."""
    f = RedactingFilter()
    for h in logging.getLogger().handlers:
        if not any(isinstance(x, RedactingFilter) for x in h.filters):
            h.addFilter(f)
