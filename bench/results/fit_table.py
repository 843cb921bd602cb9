"""Terminal tables that fit the terminal without ever cutting a number.

Rich shrinks every column of a table wider than the console, numbers included ("45,0…"). Here each number
column is exactly as wide as its widest cell and never wraps; text columns (metric names, scopes) wrap at
spaces; when even that is too wide, low-priority columns are left out in a given order and the caller says
which. If the numbers alone are wider than the terminal, the table is printed wider than the terminal
(which then wraps lines) rather than cut.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table
from rich.text import Text

Cell = str | Text  # a Text keeps its style (a coloured verdict)

GAP = 2  # rich's padding between columns (one space each side, no outer edge)
MIN_TEXT = 10  # a text column narrower than this is unreadable: drop columns first


def _plain(cell: Cell) -> str:
    return cell.plain if isinstance(cell, Text) else cell


def _width(cell: Cell) -> int:
    return max((len(line) for line in _plain(cell).split("\n")), default=0)


def _longest_word(cell: Cell) -> int:
    return max((len(w) for w in _plain(cell).split()), default=0)


def fit(headers: Sequence[str], rows: Sequence[Sequence[Cell]], numeric: Sequence[bool], width: int,
        drop_order: Sequence[str] = ()) -> tuple[Table, list[str], int]:
    """(table, headers of the columns left out, the width the table needs) for a console ``width`` wide.
    ``drop_order``: headers of columns that may be left out, least important first."""
    keep = list(range(len(headers)))
    natural = [max([_width(headers[i]), *(_width(r[i]) for r in rows)]) for i in keep]
    floor = [natural[i] if numeric[i] else min(natural[i], max(MIN_TEXT, _longest_word(headers[i]),
                                                                  *(min(_longest_word(r[i]), MIN_TEXT * 2)
                                                                    for r in rows)))
             for i in keep]

    def need(cols: list[int], widths: list[int]) -> int:
        return sum(widths[i] for i in cols) + GAP * (len(cols) - 1)

    dropped: list[str] = []
    for name in drop_order:
        if need(keep, natural) <= width:
            break
        if need(keep, floor) <= width:
            break  # wrapping the text columns is enough
        idx = [i for i in keep if headers[i] == name]
        if idx:
            keep.remove(idx[0])
            dropped.append(name)
    widths = {i: natural[i] for i in keep}
    if need(keep, natural) > width:
        # Text columns share what the numbers leave, each at least its floor, the longest ones giving most.
        text = [i for i in keep if not numeric[i]]
        room = width - need([i for i in keep if numeric[i]], natural) - GAP * len(text)
        for i in text:
            widths[i] = floor[i]
        spare = room - sum(floor[i] for i in text)
        for i in sorted(text, key=lambda i: natural[i] - floor[i]):
            if spare <= 0:
                break
            extra = min(spare, natural[i] - floor[i])
            widths[i] += extra
            spare -= extra
    table = Table(show_edge=False, header_style="bold", pad_edge=False, box=None, expand=False)
    for i in keep:
        if numeric[i]:
            table.add_column(headers[i], justify="right", no_wrap=True, width=widths[i])
        else:
            table.add_column(headers[i], overflow="fold", width=widths[i])
    for r in rows:
        table.add_row(*(r[i] for i in keep))
    return table, dropped, sum(widths.values()) + GAP * (len(keep) - 1)
