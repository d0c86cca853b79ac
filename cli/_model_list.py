"""What ``streamfn models`` lists: which models, in which order, in which columns.

Retired models are hidden unless asked for (calls to them fail); the local
model is a row like the others, its state (prepared or not) in the status
column. Numbers are compact (``200K``, ``1.05M``) so the table fits a terminal;
`streamfn.cli._table` drops the columns that matter least when it still does not.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from ._table import Column

if TYPE_CHECKING:
    from streamfn.core import Model

__all__ = ["COLUMNS", "SORTS", "Listed", "cells", "chosen", "from_catalogue"]


@dataclass(frozen=True)
class Listed:
    """One row: a catalogued model or the local one."""

    key: str
    context: int
    output: int | None
    #: dollars per million tokens; None when the data has no price
    price_in: float | None
    price_out: float | None
    reasoning: bool
    released: str
    status: str
    deprecated: bool = False
    retired: bool = False
    #: costs nothing to run (the local model): its prices read ``free``
    free: bool = False


#: the columns, the ones that matter least dropped first when the terminal is narrow
COLUMNS: Final = (
    Column("model"),
    Column("context", drop=4, right=True),
    Column("output", drop=6, right=True),
    Column("$/M in", drop=3, right=True),
    Column("$/M out", drop=2, right=True),
    Column("reasoning", drop=5),
    Column("released", drop=7),
    Column("status"),
)


def _by_name(rows: list[Listed]) -> list[Listed]:
    return sorted(rows, key=lambda row: row.key)


#: ``--sort`` choices: each puts the rows in order, ties by name
SORTS: Final[dict[str, Callable[[list[Listed]], list[Listed]]]] = {
    "name": _by_name,
    # newest first; a model without a date ("" sorts lowest) last
    "released": lambda rows: sorted(_by_name(rows), key=lambda r: r.released, reverse=True),
    "context": lambda rows: sorted(_by_name(rows), key=lambda r: -r.context),
    # free first, then cheapest output; a model without a price last
    "price": lambda rows: sorted(
        _by_name(rows),
        key=lambda r: (
            not r.free,
            r.price_out is None,
            r.price_out or 0.0,
            r.price_in or 0.0,
        ),
    ),
}


def _status(model: Model) -> str:
    """``retired``/``retires`` with the date when the data has one, else ``deprecated``."""
    if model.retired:
        return f"retired {model.end_of_life}" if model.end_of_life else "retired"
    if not model.deprecated:
        return ""
    return f"retires {model.end_of_life}" if model.end_of_life else "deprecated"


def from_catalogue(model: Model) -> Listed:
    return Listed(
        key=model.key,
        context=model.context_window,
        output=model.max_output,
        price_in=model.price_input or None,
        price_out=model.price_output or None,
        reasoning=model.reasoning,
        released=model.release_date,
        status=_status(model),
        deprecated=model.deprecated,
        retired=model.retired,
    )


def chosen(
    rows: Iterable[Listed], *, search: str | None, show_retired: bool, current_only: bool
) -> tuple[list[Listed], int]:
    """The rows to show, and how many retired ones were left out by default."""
    needle = (search or "").casefold()
    found = [row for row in rows if needle in row.key.casefold()]
    hidden = 0 if show_retired or current_only else sum(row.retired for row in found)
    if current_only:
        found = [row for row in found if not row.deprecated]
    elif not show_retired:
        found = [row for row in found if not row.retired]
    return found, hidden


def _count(n: int | None) -> str:
    """200000 as ``200K``, 1048576 as ``1.05M``, 8192 as ``8.2K``."""
    if not n:
        return ""
    if n >= 1_000_000:
        return f"{n / 1_000_000:.3g}M"
    if n >= 10_000:
        return f"{round(n / 1000)}K"
    if n >= 1000:
        return f"{n / 1000:.2g}K"
    return str(n)


def _price(value: float | None, *, free: bool) -> str:
    if free:
        return "free"
    return f"${value:g}" if value else "-"


def cells(row: Listed) -> tuple[str, ...]:
    """``row`` as the text of `COLUMNS`."""
    return (
        row.key,
        _count(row.context),
        _count(row.output),
        _price(row.price_in, free=row.free),
        _price(row.price_out, free=row.free),
        "yes" if row.reasoning else "",
        row.released,
        row.status,
    )
