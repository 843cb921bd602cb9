"""What a long step (cluster boot, corpus preparation) is doing, shown as a spinner on a terminal.

``step(text)`` shows a rich spinner for the duration of a block; code deep inside it calls ``say(detail)``
("decompressing documents.json.bz2", "waiting for cluster default: 1 of 3 nodes") and the spinner's text
follows. Off the terminal and with ``--quiet`` (``enabled=False``) nothing is shown and ``say`` does nothing,
so logs and CI output stay clean. The spinner draws on rich's global console, the one download progress bars
use, so a bar shown inside a step nests under the spinner instead of fighting it.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator

import rich
from rich.console import Console
from rich.markup import escape

# The spinner's update of the running step; a plain global (not a context variable) so that clusters started
# from worker threads reach it too.
_current: list[Callable[[str], None]] = []


@contextlib.contextmanager
def step(text: str, *, enabled: bool = True, console: Console | None = None) -> Iterator[None]:
    """A spinner saying ``text`` (and the latest ``say``) while the block runs, where it can be seen."""
    console = console or rich.get_console()
    if not enabled or not console.is_terminal:
        yield
        return
    with console.status(f"{text} ...") as status:
        _current.append(lambda detail: status.update(f"{text}: {detail}"))
        try:
            yield
        finally:
            _current.pop()


def say(detail: str) -> None:
    """Tell the spinner of the current step what is happening now (nothing when there is none)."""
    if _current:
        _current[-1](detail)


def notice(line: str) -> None:
    """One line the user must see whatever the display (terminal or not, ``--quiet`` or not): on stderr, so a
    machine-readable report on stdout stays parseable. Also logged."""
    logging.getLogger("bench").warning("%s", line)
    Console(stderr=True, soft_wrap=True).print(f"[yellow]Note:[/yellow] {escape(line)}", highlight=False, markup=True)
