"""``streamfn usage``: who spent what, on which model, when: totals from the usage store.

Rows are grouped by any of key, model, day (UTC) and deployment, over a time
range (default: the last 30 days), and end with a total; ``--json`` prints the
same numbers for a script. ``--prune-before`` forgets the records older than a
moment instead (the table of use grows with every request); what each key spent
in its budget's period is kept apart from the records, so budgets stay whole.
Cost counts priced requests only: requests of a model
with no known prices are counted as ``unpriced``, and the table says how many.
A request whose upstream reported no usage is billed the gateway's estimate: the
``estimated`` column is the part of the cost that is estimated, and the table
says how many requests and tokens that is. ``failovers`` counts the attempts
that failed over to another deployment: grouped by deployment, on the one that
failed (a deployment no request ended on still gets its row).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import time
from collections.abc import Sequence
from typing import Final, cast, get_args

from streamfn.ledger._store import Grouping

from ._command import EXIT_OK, EXIT_USAGE, Command, CommandError
from ._ledger_args import add_store, located, money, opened, since_time
from ._table import Column, fit, terminal_width

__all__ = ["COMMAND"]

GROUPINGS: Final = get_args(Grouping)
#: the records a prune always keeps: the last day's (seconds)
_KEEP_AT_LEAST: Final = 86400.0
NUMBERS: Final = (
    ("requests", "requests", 0),
    ("input_tokens", "input", 0),
    ("cached_tokens", "cached", 3),
    ("cache_write_tokens", "cache write", 4),
    ("output_tokens", "output", 0),
    ("reasoning_tokens", "reasoning", 2),
    ("cost", "cost", 0),
    ("errors", "errors", 1),
    ("unpriced", "unpriced", 5),
    ("estimated_cost", "estimated", 6),
    ("failovers", "failovers", 7),
)
#: summed into the total, shown under the table
_NOTED: Final = ("estimated", "estimated_tokens")
#: the numbers in US dollars
_MONEY: Final = ("cost", "estimated_cost")

DESCRIPTION: Final = """\
Usage totals from the store `streamfn serve` records every request in: requests,
tokens of each kind, cost (priced from the model catalogue) and errors, grouped
by client key, model, UTC day or deployment, with a total.
"""

EPILOG: Final = """\
examples:
  streamfn usage
      the last 30 days, by key and model
  streamfn usage --by day --since 7d
      the last week, day by day
  streamfn usage --by model --key key_1a2b3c4d5e6f --since 2026-11-01
      one key's spend by model since a date
  streamfn usage --by key,day --json | jq '.total.cost'
      the same numbers as JSON
  streamfn usage --prune-before 90d
      forget the records older than 90 days (budgets' spend is kept)
"""


def _groupings(text: str) -> list[str]:
    chosen = [part.strip() for part in text.split(",") if part.strip()]
    unknown = [part for part in chosen if part not in GROUPINGS]
    if unknown or len(set(chosen)) != len(chosen):
        raise argparse.ArgumentTypeError(
            f"{text!r}: give some of {','.join(GROUPINGS)}, each once, comma-separated"
        )
    return chosen


def _configure(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.description = DESCRIPTION
    parser.epilog = EPILOG
    parser.add_argument(
        "--by",
        type=_groupings,
        default=["key", "model"],
        metavar="A,B",
        help=f"group by any of {', '.join(GROUPINGS)} (default: key,model)",
    )
    parser.add_argument(
        "--since", default="30d", metavar="WHEN", help="7d, 12h, 2w ago, or a date (default: 30d)"
    )
    parser.add_argument(
        "--until", metavar="WHEN", help="a date, or a span ago such as 1d (default: now)"
    )
    parser.add_argument("--key", metavar="ID", help="one key's usage only (key_…)")
    parser.add_argument(
        "--prune-before",
        metavar="WHEN",
        help="delete the records from before WHEN (90d, or a date; at least a day ago) "
        "instead of reporting; spend totals of budgets are kept",
    )
    add_store(parser)
    parser.add_argument("--json", action="store_true", help="print JSON")


def _run(args: argparse.Namespace) -> int:
    now = time.time()
    if args.prune_before is not None:
        return _prune(args, now)
    since = since_time("--since", args.since, now)
    until = now + 1 if args.until is None else since_time("--until", args.until, now)
    if until <= since:
        raise CommandError(f"--until is not after --since ({args.since})", EXIT_USAGE)
    with opened(args) as store:
        if args.key is not None:
            store.spent(args.key, now=now)  # an unknown id is an error, not an empty report
        rows = store.report(args.by, since=since, until=until, key_id=args.key)
        names = {key.id: key.name for key in store.list_keys()}
    total = _total(rows)
    if args.json:
        print(json.dumps({"since": since, "until": until, "by": args.by, "rows": rows,
                          "total": total}))  # fmt: skip
        return EXIT_OK
    if not rows:
        print(f"no usage recorded in {located(args.store)} in this range")
        return EXIT_OK
    _table(args.by, rows, total, names)
    return EXIT_OK


def _prune(args: argparse.Namespace, now: float) -> int:
    """Forget the records before ``--prune-before``: never the last day's, which the
    tokens-per-minute limits and the dashboard read."""
    before = since_time("--prune-before", args.prune_before, now)
    if before > now - _KEEP_AT_LEAST:
        raise CommandError(
            f"--prune-before {args.prune_before!r} is less than a day ago: give 1d or more "
            "(the last day's records are the limits' and the dashboard's)",
            EXIT_USAGE,
        )
    with opened(args) as store:
        gone = store.prune(before=before)
    day = dt.datetime.fromtimestamp(before, dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    if args.json:
        print(json.dumps({"pruned": gone, "before": before}))
    else:
        print(f"{gone:,} usage records from before {day} deleted; spend totals kept")
    return EXIT_OK


def _total(rows: list[dict[str, object]]) -> dict[str, object]:
    names = [name for name, _, _ in NUMBERS] + list(_NOTED)
    total = {name: sum(cast(int, row[name]) for row in rows) for name in names}
    return {**total, **{name: float(total[name]) for name in _MONEY}}


def _cell(name: str, value: object) -> str:
    if name in _MONEY:
        return money(cast(float, value))
    return f"{value:,}"


def _table(
    by: Sequence[str],
    rows: list[dict[str, object]],
    total: dict[str, object],
    names: dict[str, str],
) -> None:
    def label(field: str, value: object) -> str:
        if value is None:
            return "-" if field != "key" else "(no key)"
        if field == "key" and value in names:
            return f"{value} ({names[str(value)]})"
        return str(value)

    grouped = list(by) or ["range"]
    columns = [Column(field) for field in grouped] + [
        Column(header, drop=drop, right=True) for _, header, drop in NUMBERS
    ]
    cells = [
        [label(field, row.get(field)) for field in grouped]
        + [_cell(name, row[name]) for name, _, _ in NUMBERS]
        for row in rows
        if by
    ]
    cells.append(
        ["total"] + [""] * (len(grouped) - 1) + [_cell(n, total[n]) for n, _, _ in NUMBERS]
    )
    for line in fit(columns, cells, terminal_width()):
        print(line)
    if total["unpriced"]:
        print(
            f"{total['unpriced']} requests were of models with no known prices: "
            "their cost is not in these totals"
        )
    if total["estimated"]:
        print(
            f"{total['estimated']} requests were billed an estimate (their upstream reported "
            f"no usage): {total['estimated_tokens']:,} tokens and "
            f"{money(cast(float, total['estimated_cost']))} of these totals"
        )


COMMAND = Command(
    "usage", "who spent what, on which model: usage totals from the store", _configure, _run
)
