"""``streamfn keys create|list|revoke|rotate``: the client keys of a gateway a team runs.

A key's secret is printed once, when it is made or rotated, and never again:
the store keeps only its hash. Listings show ids (safe to share: usage,
metrics and logs name keys by id), never a secret or a hash.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import time
from collections.abc import Callable
from typing import Final

from streamfn.ledger import ClientKey, Store

from ._command import EXIT_OK, EXIT_USAGE, Command, CommandError
from ._ledger_args import add_store, located, money, opened, when
from ._table import Column, fit, terminal_width

__all__ = ["COMMAND"]

PERIODS: Final = ("day", "week", "month", "total")
NOT_AGAIN: Final = (
    "This secret will not be shown again: give it to the client now "
    "(it sends it as its API key). Lost? `streamfn keys rotate ID` makes a new one."
)

DESCRIPTION: Final = """\
Client keys for `streamfn serve`: each client gets its own key, with the models
it may use, a budget in dollars per period (priced from the model catalogue,
cache tiers included), requests and tokens per minute, and an expiry. Secrets
are shown once and stored hashed. Keys live in the usage store the server uses.
"""

EPILOG: Final = """\
examples:
  streamfn keys create ci --models openai:gpt-4o-mini,local --budget 10 --period month
      a key for CI: two models, $10 a month; prints its secret once
  streamfn keys create intern --budget 2 --period day --rpm 20 --expires 30d
      $2 a day, 20 requests a minute, for 30 days
  streamfn keys list
      every key: models, budget, spent this period, limits, expiry
  streamfn keys rotate key_1a2b3c4d5e6f
      a new secret for the same key; the old one stops working within a second
  streamfn keys revoke key_1a2b3c4d5e6f
      the key stops working at once, on every worker and host
"""


def _positive(kind: type[int] | type[float]) -> Callable[[str], int | float]:
    def parse(text: str) -> int | float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if not value > 0:
            raise argparse.ArgumentTypeError(f"{text!r} must be more than 0")
        return value

    return parse


def _named(text: str) -> str:
    """A key's name: who it is for, so lists and usage can tell keys apart."""
    if not text.strip():
        raise argparse.ArgumentTypeError("a key needs a name saying who it is for, e.g. ci")
    return text.strip()


def _dollars(text: str) -> float:
    """A budget: US dollars, a leading ``$`` allowed (``10``, ``$2.50``)."""
    try:
        value = float(text.strip().removeprefix("$"))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not an amount of US dollars: give a number, such as 10 for $10 "
            "or 0.5 for 50 cents"
        ) from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} must be a number of dollars more than 0")
    return value


#: the commands besides create: name, one-line help, what --help says they do
_OTHERS: Final = (
    (
        "list",
        "every key, its limits and spend (never a secret)",
        "Every key of the store: its id, name, models, budget, what it spent this period, "
        "limits, expiry and revocation. Never a secret or a hash.",
    ),
    (
        "revoke",
        "stop a key at once",
        "Stop a key: every worker and host refuses it within a second. It stays listed, "
        "and its usage stays on record.",
    ),
    (
        "rotate",
        "a new secret for a key (printed once)",
        "A new secret for a key whose secret leaked or was lost: same id, limits and "
        "spend; the old secret stops working within a second.",
    ),
)


def _configure(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.description = DESCRIPTION
    parser.epilog = EPILOG
    sub = parser.add_subparsers(dest="keys_command", metavar="{create,list,revoke,rotate}")
    sub.required = True
    _configure_create(
        sub.add_parser(
            "create",
            help="make a key and print its secret (once)",
            description="Make a client key and print its secret, which is never shown again.",
        )
    )
    for name, help_line, description in _OTHERS:
        child = sub.add_parser(name, help=help_line, description=description)
        if name != "list":
            child.add_argument("id", help="the key's id (key_…, from `streamfn keys list`)")
        add_store(child)
        if name != "revoke":
            child.add_argument("--json", action="store_true", help="print JSON")


def _configure_create(create: argparse.ArgumentParser) -> None:
    create.add_argument("name", type=_named, help="who the key is for (shown in lists and usage)")
    create.add_argument(
        "--models",
        metavar="A,B",
        default="",
        help="the served model names it may use, comma-separated (default: every one)",
    )
    create.add_argument(
        "--budget",
        type=_dollars,
        metavar="DOLLARS",
        help="the most it may spend per --period, in US dollars: 10 or $10 (default: no budget)",
    )
    create.add_argument(
        "--period",
        choices=PERIODS,
        default="month",
        help="when the budget renews: each UTC day, ISO week, month, or never (default: month)",
    )
    create.add_argument("--rpm", type=_positive(int), metavar="N", help="requests per minute")
    create.add_argument(
        "--tpm", type=_positive(int), metavar="N", help="tokens (input + output) per minute"
    )
    create.add_argument(
        "--expires", metavar="WHEN", help="30d, 12h, 2w from now, or a date: 2027-01-01"
    )
    add_store(create)
    create.add_argument("--json", action="store_true", help="print JSON")


def _run(args: argparse.Namespace) -> int:
    now = time.time()
    with opened(args, create=args.keys_command == "create") as store:
        if args.keys_command == "create":
            return _create(store, args, now)
        if args.keys_command == "list":
            return _list(store, args, now)
        if args.keys_command == "rotate":
            secret = store.rotate_key(args.id, now=now)
            _show_secret(args, {"id": args.id}, secret)
            return EXIT_OK
        store.revoke_key(args.id, now=now)
        print(f"revoked {args.id} in {located(args.store)}: it is refused from now on")
        return EXIT_OK


def _create(store: Store, args: argparse.Namespace, now: float) -> int:
    models = tuple(m.strip() for m in args.models.split(",") if m.strip())
    if args.models and not models:
        raise CommandError("--models names no model: give A,B or leave it out", EXIT_USAGE)
    expires = None if args.expires is None else when("--expires", args.expires, now)
    key, secret = store.create_key(
        args.name,
        now=now,
        models=models,
        budget=args.budget,
        period=args.period,
        rpm=args.rpm,
        tpm=args.tpm,
        expires_at=expires,
    )
    _show_secret(args, _fields(key), secret)
    if not args.json:
        print(_checked_by(args.store))
    return EXIT_OK


def _checked_by(store: str | None) -> str:
    """The step a newcomer misses: a server checks client keys only with ``--store``
    (else it serves every client as one, these keys unread)."""
    named = "" if store is None else f" {located(store)}"
    return (
        f"A server checks clients' keys only when started with `streamfn serve --store{named}` "
        "(or a [keys] table in its --config)."
    )


def _show_secret(args: argparse.Namespace, fields: dict[str, object], secret: str) -> None:
    if args.json:
        print(json.dumps({**fields, "secret": secret, "note": NOT_AGAIN}))
        return
    print(
        f"key {fields['id']}"
        + (f" ({fields['name']})" if "name" in fields else "")
        + f" in {located(args.store)}"
    )
    print(f"secret: {secret}")
    print(NOT_AGAIN)


def _fields(key: ClientKey) -> dict[str, object]:
    return {
        "id": key.id,
        "name": key.name,
        "created_at": key.created_at,
        "models": list(key.models),
        "budget": key.budget,
        "period": key.period,
        "rpm": key.rpm,
        "tpm": key.tpm,
        "expires_at": key.expires_at,
        "revoked_at": key.revoked_at,
    }


def _date(at: float | None) -> str:
    if at is None:
        return "-"
    return dt.datetime.fromtimestamp(at, dt.UTC).strftime("%Y-%m-%d %H:%M")


def _expired(key: ClientKey, now: float) -> bool:
    """Refused for its expiry (a revoked key says so in its own column)."""
    return key.revoked_at is None and key.expires_at is not None and key.expires_at <= now


def _list(store: Store, args: argparse.Namespace, now: float) -> int:
    keys = store.list_keys()
    spent = {key.id: store.spent(key.id, now=now) for key in keys}
    if args.json:
        print(json.dumps([{**_fields(key), "spent": spent[key.id]} for key in keys]))
        return EXIT_OK
    if not keys:
        print(f"no client keys in {located(args.store)} yet: `streamfn keys create NAME` makes one")
        return EXIT_OK
    columns = [
        Column("id"),
        Column("name"),
        Column("models", drop=2),
        Column("budget", right=True),
        Column("spent", right=True),
        Column("limits", drop=3),
        Column("expires", drop=4),
        Column("revoked", drop=1),
    ]
    rows = [
        [
            key.id,
            key.name + (" (expired)" if _expired(key, now) else ""),
            ",".join(key.models) or "all",
            "-" if key.budget is None else f"{money(key.budget)}/{key.period}",
            money(spent[key.id]),
            ", ".join(f"{n} {unit}" for n, unit in ((key.rpm, "rpm"), (key.tpm, "tpm")) if n)
            or "-",
            _date(key.expires_at),
            "" if key.revoked_at is None else _date(key.revoked_at),
        ]
        for key in keys
    ]
    for line in fit(columns, rows, terminal_width(), say_dropped=True):
        print(line)
    return EXIT_OK


COMMAND = Command(
    "keys", "make, list, revoke and rotate client keys for `streamfn serve`", _configure, _run
)
