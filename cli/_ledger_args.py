"""What ``streamfn keys`` and ``streamfn usage`` share: ``--store``, times, money, one way.

The store is named by ``--store URL``, else ``$STREAMFN_STORE``, else the file
``streamfn serve`` uses by default (`default_store_url`): with no flags, the
commands see the server's own keys and usage. A store that cannot be opened is
one line naming it (password redacted) and what to do. Only ``keys create`` makes
a SQLite store that is not there: every other command, pointed at a mistyped path
or at another user's default, says there is no store there rather than answer
"no keys" from a new, empty one.
"""

from __future__ import annotations

import argparse
import datetime as dt
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final

from streamfn.ledger import Store, StoreError, default_store_url, open_store
from streamfn.ledger._redact import redact

from ._command import EXIT_USAGE, CommandError

__all__ = [
    "add_store", "at_time", "located", "money", "opened", "since_time", "when"
]  # fmt: skip

STORE_HELP: Final = (
    "the usage store: sqlite:///path.db, a path, or postgresql://user@host/db "
    "(default: $STREAMFN_STORE, else the file `streamfn serve` uses, "
    "~/.local/state/streamfn/gateway.db)"
)

_SPAN = re.compile(r"^(\d+)([hdw])$")
_SPAN_SECONDS: Final = {"h": 3600, "d": 86400, "w": 7 * 86400}


def add_store(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--store", metavar="URL", help=STORE_HELP)


def located(url: str | None) -> str:
    """Where the store ``url`` names is (None or "": the default), password redacted:
    what the server's start line and the commands' answers show, so that two stores
    never pass for one."""
    return redact(url or default_store_url())


@contextmanager
def opened(args: argparse.Namespace, *, create: bool = False) -> Iterator[Store]:
    """The store ``--store`` names, closed afterwards; its errors as one line. Unless
    ``create``, a SQLite store that does not exist is such an error."""
    try:
        store = open_store(args.store, create=create)
    except StoreError as exc:
        raise CommandError(str(exc)) from None
    try:
        yield store
    except StoreError as exc:
        raise CommandError(str(exc)) from None
    except LookupError as exc:
        raise CommandError(f"{exc.args[0]}: {_ids_hint(store, args)}", EXIT_USAGE) from None
    finally:
        store.close()


def _ids_hint(store: Store, args: argparse.Namespace) -> str:
    """Where to find a key's id; the id itself when what was given is a key's name (a
    newcomer's first guess: `streamfn keys revoke ci`)."""
    given = getattr(args, "id", None) or getattr(args, "key", None)
    try:
        named = [key.id for key in store.list_keys() if key.name == given]
    except StoreError:
        named = []
    if named:
        return f"{given!r} is the name of {', '.join(named)}: give the id (key_…)"
    return "`streamfn keys list` shows every key's id"


def at_time(flag: str, text: str) -> float:
    """``YYYY-MM-DD`` (midnight UTC) or an ISO date and time (UTC unless it says) as
    Unix seconds."""
    try:
        moment = dt.datetime.fromisoformat(text.strip())
    except ValueError:
        raise CommandError(
            f"{flag} {text!r} is not a date: give 2027-01-31, 2027-01-31T18:00, or a span "
            "such as 30d, 12h, 2w",
            EXIT_USAGE,
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return moment.timestamp()


def _span(text: str) -> float | None:
    found = _SPAN.match(text.strip())
    return int(found[1]) * _SPAN_SECONDS[found[2]] if found else None


def when(flag: str, text: str, now: float) -> float:
    """A moment after ``now``: a span (``30d``, ``12h``, ``2w``) from now, or a date."""
    span = _span(text)
    moment = now + span if span is not None else at_time(flag, text)
    if moment <= now:
        raise CommandError(f"{flag} {text!r} is not in the future", EXIT_USAGE)
    return moment


def since_time(flag: str, text: str, now: float) -> float:
    """A moment before ``now``: a span (``7d``) back from now, or a date."""
    span = _span(text)
    return now - span if span is not None else at_time(flag, text)


def money(amount: float) -> str:
    """Dollars with cents, and more digits for the fractions of a cent calls cost."""
    return f"${amount:,.2f}" if amount >= 1 or amount == 0 else f"${amount:.4f}"
