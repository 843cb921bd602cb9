"""The Jinja2 environment Rally tracks and OpenSearch Benchmark workloads are rendered in.

Mirrors what Rally gives a track: ``{% import "rally.helpers" as rally with context %}`` (macros
``collect`` and ``exists_set_param``), the global ``now`` (epoch seconds), ``glob`` (relative to the
track folder) and the ``days_ago`` filter; ``{% include %}`` resolves relative to the track folder.
OSB gives a workload the same macros as ``"benchmark.helpers"`` and adds the ``version_between`` filter; both are
there for either format (a name the other tool does not know is not used by its files).
Track parameters are globals, so included and collected files see them too.
"""

from __future__ import annotations

import contextlib
import contextvars
import glob as _glob
import re
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from types import FrameType
from typing import Any

import jinja2
from jinja2 import meta, nodes

HELPERS_NAME = "rally.helpers"
OSB_HELPERS_NAME = "benchmark.helpers"
HELPER_NAMES = (HELPERS_NAME, OSB_HELPERS_NAME)

# Same macros (and so the same output) as Rally's, so existing tracks render byte-for-byte alike.
HELPERS = """
{% macro collect(parts) -%}
    {% set comma = joiner() %}
    {% for part in glob(parts) %}
        {{ comma() }}
        {% include part %}
    {% endfor %}
{%- endmacro %}
{% macro exists_set_param(setting_name, value, default_value=None, comma=True) -%}
    {% if value is defined or default_value is not none %}
        {% if comma %} , {% endif %}
        {% if default_value is not none %}
          "{{ setting_name }}": {{ value | default(default_value) | tojson }}
        {% else %}
          "{{ setting_name }}": {{ value | tojson }}
        {% endif %}
    {% endif %}
{%- endmacro %}
"""

# Rally inlines ``{{ rally.collect(parts="...") }}`` (OSB: ``benchmark.collect``) as text before rendering so that
# variables set in track.json are visible in the collected parts; we do the same.
COLLECT_RE = re.compile(r"{{\s*(?:rally|benchmark)\.collect\(parts=\"(.+?(?=\"))\"\)\s*}}")


def _to_datetime(value: Any, date_format: str) -> datetime:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=timezone.utc)
    if isinstance(value, (int, float)):
        return datetime.fromtimestamp(value, timezone.utc)
    if isinstance(value, str):
        return datetime.strptime(value, date_format).replace(tzinfo=timezone.utc)
    raise TypeError(f"days_ago cannot use {value!r} ({type(value).__name__}) as a date")


def days_ago(start_date: Any, end_date: Any, date_format: str = "%d-%m-%Y") -> int:
    """Whole days from start_date to end_date (Rally's filter: ``{{'15-05-1998' | days_ago(now)}}``)."""
    return (_to_datetime(end_date, date_format) - _to_datetime(start_date, date_format)).days


def version_between(version: str, low: str, high: str) -> bool:
    """OSB's filter: ``low <= version <= high``, comparing dotted integer versions (``"2.11.0"``)."""
    def parts(v: str) -> list[int]:
        try:
            return [int(x) for x in str(v).split(".")]
        except ValueError:
            raise ValueError(f"version_between: {v!r} is not a dotted version such as 2.11.0") from None

    return parts(low) <= parts(version) <= parts(high)


def relative_glob(root: Path, pattern: str) -> list[str]:
    """Files matching ``pattern`` under ``root``, as sorted paths relative to root (stable order)."""
    return sorted(str(Path(p).relative_to(root)) for p in _glob.glob(str(root / pattern)))


# The undefined variables whose (empty) value a render printed or iterated, with the template file and line of
# their first use, per render.
_PRINTED: contextvars.ContextVar[list[PrintedUndefined] | None] = contextvars.ContextVar("bench_undefined_printed",
                                                                                         default=None)


@dataclass(frozen=True)
class PrintedUndefined:
    name: str
    file: str | None  # the template file (None when Jinja2 has no file for it)
    line: int | None


def _template_line() -> tuple[str | None, int | None]:
    """The template file and line being rendered: the innermost frame of code Jinja2 compiled from a template."""
    frame: FrameType | None = sys._getframe(2)
    while frame is not None:
        template = frame.f_globals.get("__jinja_template__")
        if template is not None:
            return template.filename, template.get_corresponding_lineno(frame.f_lineno)
        frame = frame.f_back
    return None, None


class TrackUndefined(jinja2.Undefined):
    """Rally's lenient undefined: printed it is '', iterated it is empty, a truth test is false, ``default()`` and
    ``is defined`` treat it as absent. bench notes every one that is printed or iterated (``undefined_printed``) so
    the loader can name them instead of letting '' pass unseen; a plain test or comparison (``{% if x %}``,
    ``{% if source_mode == "synthetic" %}``) is how tracks ask for optional parameters, so it is not noted."""

    def _note(self) -> None:
        printed = _PRINTED.get()
        name = self._undefined_name
        if printed is not None and name is not None and all(p.name != name for p in printed):
            printed.append(PrintedUndefined(name, *_template_line()))

    def __str__(self) -> str:
        self._note()
        return ""

    def __iter__(self) -> Iterator[Any]:
        self._note()
        return iter(())

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other)

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return id(type(self))


@contextlib.contextmanager
def undefined_printed() -> Iterator[list[PrintedUndefined]]:
    """Collect the undefined variables a render inside the block printed or iterated (in first-use order)."""
    printed: list[PrintedUndefined] = []
    token = _PRINTED.set(printed)
    try:
        yield printed
    finally:
        _PRINTED.reset(token)


def make_environment(
    root: Path, params: dict[str, Any] | None = None, *, now: float | None = None
) -> jinja2.Environment:
    # Helpers first so a track cannot shadow them (as in Rally).
    env = jinja2.Environment(
        loader=jinja2.ChoiceLoader(
            [jinja2.DictLoader({name: HELPERS for name in HELPER_NAMES}), jinja2.FileSystemLoader(str(root))]
        ),
        keep_trailing_newline=True,
        undefined=TrackUndefined,
    )
    for k, v in (params or {}).items():
        env.globals[k] = v
    # Internal names win over user params, like in Rally. Rally renders tracks for the cluster's build flavor
    # ("default"; "serverless" only for Elastic's serverless offering) and not as the serverless operator.
    env.globals["build_flavor"] = "default"
    env.globals["serverless_operator"] = False
    env.globals["now"] = time.time() if now is None else now
    env.globals["glob"] = lambda pattern: relative_glob(root, pattern)
    env.filters["days_ago"] = days_ago
    env.filters["version_between"] = version_between
    return env


INTERNAL_NAMES = frozenset({"now", "glob", "build_flavor", "serverless_operator"})


def assemble(root: Path, source: str, base: Path | None = None) -> str:
    """``source`` with every ``rally.collect(parts=...)`` replaced by the matching files joined by commas."""
    base = base or root

    def repl(m: re.Match[str]) -> str:
        pattern = m.group(1)
        files = sorted(_glob.glob(str(base / pattern)))
        texts = [assemble(root, Path(f).read_text(encoding="utf-8"), Path(f).parent) for f in files]
        # Each part is wrapped in Jinja2 comments (they render to nothing) naming its file and the line its
        # text starts on, so a render error's line in the assembled text can be traced back (source_line).
        return "".join(_MARK_BEGIN.format(file=f, first=1 if i == 0 else 0) + ("" if i == 0 else ",\n") + t
                       + _MARK_END for i, (f, t) in enumerate(zip(files, texts)))

    return COLLECT_RE.sub(repl, source)


_MARK_BEGIN = "{{# bench-part {first} {file} #}}"
_MARK_END = "{# bench-part-end #}"
_MARK_RE = re.compile(r"\{# bench-part (?:(\d) (.*?)|-end) #\}")


def source_line(assembled: str, file: str, line: int) -> tuple[str, int]:
    """The file and line that line ``line`` of ``assemble``'s output came from."""
    stack: list[tuple[str, int]] = [(file, 1)]  # the files being included, each with the line pos is on
    at = 1  # the assembled line the text from pos starts on
    pos = 0
    for m in [*_MARK_RE.finditer(assembled), None]:
        newlines = assembled[pos:m.start() if m else len(assembled)].count("\n")
        if at + newlines >= line or m is None:
            return stack[-1][0], stack[-1][1] + line - at
        at += newlines
        stack[-1] = (stack[-1][0], stack[-1][1] + newlines)
        if m.group(2) is not None:
            stack.append((m.group(2), int(m.group(1))))
        elif len(stack) > 1:
            stack.pop()
        pos = m.end()
    return file, line


def _collect_patterns(ast: nodes.Template) -> list[str]:
    """Constant ``parts`` of every ``rally.collect(...)`` call left in a template (non-inlined forms)."""
    out = []
    for call in ast.find_all(nodes.Call):
        if isinstance(call.node, nodes.Getattr) and call.node.attr == "collect":
            for kw in call.kwargs:
                if kw.key == "parts" and isinstance(kw.value, nodes.Const):
                    out.append(kw.value.value)
            for arg in call.args[:1]:
                if isinstance(arg, nodes.Const):
                    out.append(arg.value)
    return out


def template_files(env: jinja2.Environment, root: Path, name: str) -> list[str]:
    """``name`` and every file it includes, imports or collects (recursively), relative to root."""
    seen: list[str] = []
    todo = [name]
    while todo:
        cur = todo.pop()
        if cur in seen or cur in HELPER_NAMES:
            continue
        seen.append(cur)
        source = (root / cur).read_text(encoding="utf-8")
        ast = env.parse(source, name=cur, filename=str(root / cur))
        for ref in meta.find_referenced_templates(ast):
            if ref and (root / ref).is_file():
                todo.append(ref)
        for m in COLLECT_RE.findall(source) + _collect_patterns(ast):
            todo.extend(relative_glob(root, m))
    return seen


def _declared(ast: nodes.Template) -> set[str]:
    """Names a template assigns (``set``, ``import ... as``, ``from ... import``)."""
    out: set[str] = set()
    assigns: list[nodes.Assign | nodes.AssignBlock] = [*ast.find_all(nodes.Assign), *ast.find_all(nodes.AssignBlock)]
    for node in assigns:
        out |= {n.name for n in node.target.find_all(nodes.Name)} | (
            {node.target.name} if isinstance(node.target, nodes.Name) else set()
        )
    for imp in ast.find_all(nodes.Import):
        out.add(imp.target)
    for from_imp in ast.find_all(nodes.FromImport):
        out |= {n if isinstance(n, str) else n[1] for n in from_imp.names}
    return out


def used_variables(env: jinja2.Environment, root: Path, names: list[str]) -> set[str]:
    """Variables the templates read from outside (candidate track parameters).

    ``names[0]`` is the main template: what it declares (e.g. ``rally`` from the helpers import, or a
    ``{% set %}``) is visible to the files it includes or collects, so it is not a parameter there.
    """
    used: set[str] = set()
    main_declared: set[str] = set()
    for i, n in enumerate(names):
        ast = env.parse((root / n).read_text(encoding="utf-8"), name=n, filename=str(root / n))
        found = meta.find_undeclared_variables(ast)
        if i == 0:
            main_declared = _declared(ast)
        else:
            found -= main_declared
        used |= found
    builtins = set(jinja2.Environment().globals)
    return used - INTERNAL_NAMES - builtins
