"""A table of text that fits a terminal's width, for listings such as ``streamfn models``.

The first column names each row (a model's ``provider:id``): it is never cut,
because a reader copies it. When the table is too wide, the columns that
matter least are dropped first; a name longer than its column takes a line of
its own and the row's other cells follow on the next line, aligned.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

__all__ = ["Column", "fit", "terminal_width"]

#: the width of a pipe or a file, and of a terminal that does not say
DEFAULT_WIDTH: Final = 80

#: the narrowest the name column gets before another column is dropped
_NAME_MIN: Final = 24

_GAP: Final = "  "


@dataclass(frozen=True)
class Column:
    """One column: its header, and ``drop``, the order it goes in when space runs out
    (higher goes first; 0 never goes)."""

    header: str
    drop: int = 0
    right: bool = False


def terminal_width() -> int:
    """The terminal's columns (``$COLUMNS`` first); 80 when stdout is not a terminal."""
    return shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns


def fit(
    columns: Sequence[Column],
    rows: Sequence[Sequence[str]],
    width: int | None,
    *,
    say_dropped: bool = False,
) -> list[str]:
    """The header and ``rows``, one string each, at most ``width`` characters a line
    (None: no limit); a row whose name is longer than its column is two lines.

    Only a name longer than ``width``, or a table whose never-dropped columns
    alone are wider, goes past it. ``say_dropped``: a last line names the columns
    left out, so that a narrow terminal does not pass for a key without an expiry.
    """
    widths = [
        max([len(column.header), *(len(row[i]) for row in rows)])
        for i, column in enumerate(columns)
    ]
    kept = list(range(len(columns)))
    longest_name = widths[0]

    def others() -> int:
        return sum(widths[i] + len(_GAP) for i in kept[1:])

    droppable = sorted((c.drop, i) for i, c in enumerate(columns) if c.drop > 0)
    while width is not None and droppable and others() + min(longest_name, _NAME_MIN) > width:
        kept.remove(droppable.pop()[1])
    name_width = longest_name if width is None else max(min(longest_name, width - others()), 1)
    header = [column.header for column in columns]
    lines = [_line(cells, kept, columns, widths, name_width) for cells in [header, *rows]]
    left_out = [column.header for i, column in enumerate(columns) if i not in kept]
    if say_dropped and left_out:
        lines.append(
            f"(hidden at this width: {', '.join(left_out)}; widen the terminal or use --json)"
        )
    return lines


def _line(
    cells: Sequence[str],
    kept: list[int],
    columns: Sequence[Column],
    widths: list[int],
    name_width: int,
) -> str:
    rest = _GAP.join(
        cells[i].rjust(widths[i]) if columns[i].right else cells[i].ljust(widths[i])
        for i in kept[1:]
    ).rstrip()
    name = cells[0]
    if len(name) > name_width and rest:
        return f"{name}\n{' ' * name_width}{_GAP}{rest}"
    return f"{name.ljust(name_width)}{_GAP}{rest}".rstrip()
