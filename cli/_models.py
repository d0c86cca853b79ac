"""``streamfn models``: the known models, and where their data comes from.

Lists the catalogue in use (limits, prices, reasoning, release date, and
``retires`` with the end-of-life date for a model its provider has deprecated),
fitted to the terminal's width. Retired models (calls to them fail) are left
out unless ``--all`` asks; ``--current`` leaves out the deprecated ones too,
``--provider`` and a search text narrow the list, ``--sort`` orders it.
``--source`` says which catalogue is in use; ``--refresh`` fetches models.dev's
current data into the user cache (the only network access streamfn makes for
its catalogue) and ``--from FILE`` does the same from a copy, offline.
"""

from __future__ import annotations

import argparse
import os
import sys
import textwrap
from datetime import UTC, datetime
from pathlib import Path

from ._command import EXIT_OK, EXIT_USAGE, Command, CommandError
from ._flags import seconds
from ._model_dir import LOCAL_PREFIX
from ._model_list import COLUMNS, SORTS, Listed, cells, chosen, from_catalogue
from ._table import fit, terminal_width

__all__ = ["COMMAND"]

_EPILOG = """\
examples:
  streamfn models --provider anthropic      one provider's models
  streamfn models sonnet --current          current models whose name has "sonnet"
  streamfn models --sort price --current    the cheapest current models first
  streamfn models --all                     retired models too
  streamfn models --source                  which catalogue is in use, and its date
  streamfn models --refresh                 fetch models.dev's current data into the cache
  streamfn models --from api.json           the same from a copy of models.dev/api.json

STREAMFN_MODELS_FILE=FILE uses that catalogue instead of the built-in and cached
ones; STREAMFN_MODELS_URL (or --url) fetches from a mirror of models.dev/api.json.
A fetch takes at most --timeout seconds (120) and 64 MiB, and follows a redirect
only within the URL's origin or to a public address.
"""


def _configure(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = _EPILOG
    parser.add_argument(
        "search",
        nargs="?",
        metavar="TEXT",
        help="only models whose provider:id contains TEXT (any case), e.g. sonnet",
    )
    parser.add_argument("--provider", help="only this provider's models")
    parser.add_argument(
        "--all", action="store_true", help="list retired models too (hidden by default)"
    )
    parser.add_argument(
        "--current",
        action="store_true",
        help="only current models: none deprecated or retired",
    )
    parser.add_argument(
        "--sort",
        choices=tuple(SORTS),
        default="name",
        help="name (default), released (newest first), context (largest first) "
        "or price (free first, then cheapest output)",
    )
    parser.add_argument(
        "--wide",
        action="store_true",
        help="every column whatever the width (default: fit the terminal, 80 columns when not one)",
    )
    update = parser.add_mutually_exclusive_group()
    update.add_argument(
        "--refresh", action="store_true", help="fetch models.dev's current data into the cache"
    )
    update.add_argument(
        "--from", dest="from_file", metavar="FILE", help="cache this catalogue file (offline)"
    )
    parser.add_argument(
        "--url",
        help="where --refresh fetches from (a mirror; default $STREAMFN_MODELS_URL "
        "or https://models.dev/api.json)",
    )
    parser.add_argument(
        "--timeout",
        type=seconds(zero=False),
        metavar="SECONDS",
        help="the longest --refresh may take in all (default 120)",
    )
    parser.add_argument(
        "--source", action="store_true", help="say which catalogue is in use, and stop"
    )


def _update(args: argparse.Namespace) -> None:
    """``--refresh``/``--from``: write the new catalogue to the cache, then use it."""
    from streamfn.io_common import load_user_catalog
    from streamfn.io_common._catalog_cache import (
        DEADLINE,
        DEFAULT_URL,
        ENV_URL,
        CatalogError,
        cache_path,
        read_catalog_file,
        refresh,
        save,
    )

    from ._progress import progress_printer

    try:
        if args.from_file:
            document = read_catalog_file(Path(args.from_file))
        else:
            url = args.url or os.environ.get(ENV_URL) or DEFAULT_URL
            document = refresh(
                url,
                now=datetime.now(UTC),
                deadline=args.timeout or DEADLINE,
                progress=progress_printer(),
            )
        path = save(document, cache_path())
    except CatalogError as exc:
        raise CommandError(f"{exc}; the catalogue in use is unchanged") from None
    except OSError as exc:
        raise CommandError(f"cannot write the catalogue cache: {exc}") from None
    count = len(document["models"])
    print(f"saved {count} models (data of {document['source']['date']}) to {path}", file=sys.stderr)
    load_user_catalog()


def _print_source() -> None:
    from streamfn.core import catalog_info
    from streamfn.io_common._catalog_cache import ENV_FILE, cache_path

    info = catalog_info()
    print(f"catalogue: {info.origin}")
    print(f"source:    {info.source}")
    print(f"models:    {info.models}")
    if info.note:
        print(f"note:      {info.note}")
    cached = cache_path()
    print(
        f"cache:     {cached}{'' if cached.is_file() else ' (none yet: streamfn models --refresh)'}"
    )
    print(f"{ENV_FILE}: {os.environ.get(ENV_FILE) or '(not set)'}")
    print("licence:   model data from models.dev, MIT licence (https://models.dev)")


def _known_providers() -> list[str]:
    """Each provider name ``--provider`` accepts, once, sorted."""
    from streamfn.core.catalogue._models import provider_names

    return sorted({*provider_names(), LOCAL_PREFIX})


def _local_row() -> Listed:
    from streamfn.local import default_model_dir, is_prepared
    from streamfn.local._fetch import DEFAULT_MODEL_NAME

    state = "prepared" if is_prepared(default_model_dir()) else "prepared on first use"
    return Listed(
        key=f"{LOCAL_PREFIX}:{DEFAULT_MODEL_NAME}",
        context=8192,
        output=None,
        price_in=None,
        price_out=None,
        reasoning=False,
        released="",
        status=state,
        free=True,
    )


def _rows(args: argparse.Namespace) -> tuple[list[Listed], int]:
    """The rows to print (filtered and sorted as asked), and how many retired were hidden."""
    from streamfn.core import list_models

    every = [from_catalogue(model) for model in list_models(args.provider)]
    if args.provider in (None, LOCAL_PREFIX):
        every.append(_local_row())
    rows, hidden = chosen(
        every, search=args.search, show_retired=args.all, current_only=args.current
    )
    return SORTS[args.sort](rows), hidden


def _nothing_listed(args: argparse.Namespace) -> None:
    """What to say when no row is left: how to reach a provider without catalogue
    entries, or that the filters left nothing (and which one to widen)."""
    from streamfn.core import list_models
    from streamfn.core._call import api_names
    from streamfn.core._wire_formats import API_MODULES

    if args.provider is not None and not list_models(args.provider):
        plugins = [name for name in api_names() if name not in API_MODULES]
        how = "a plug-in wire format; " if args.provider in plugins else ""
        print(
            f"{args.provider} has no catalogue entries ({how}any model id works): "
            f"streamfn chat -m {args.provider}:MODEL-ID (prices unknown)"
        )
        return
    asked = [f"of {args.provider}"] if args.provider else []
    asked += [f"matching {args.search!r}"] if args.search is not None else []
    if args.current:
        wider = " (--current leaves out deprecated ones)"
    else:
        wider = "" if args.all else " (--all includes retired ones)"
    print(f"no {'current ' if args.current else ''}model {' '.join(asked)}".rstrip() + wider)


def _run(args: argparse.Namespace) -> int:
    from streamfn.core._call import api_names
    from streamfn.core._wire_formats import API_MODULES

    for given, flag in ((args.url, "--url"), (args.timeout, "--timeout")):
        if given and not args.refresh:
            raise CommandError(f"{flag} goes with --refresh", EXIT_USAGE)
    if args.all and args.current:
        raise CommandError("--all and --current contradict each other: pick one", EXIT_USAGE)
    if args.refresh or args.from_file:
        _update(args)
    if args.source:
        _print_source()
        return EXIT_OK
    known = _known_providers()
    if args.provider is not None and args.provider not in known:
        raise CommandError(
            f"unknown provider {args.provider!r}; known providers: {', '.join(known)}",
            EXIT_USAGE,
        )
    rows, hidden = _rows(args)
    if not rows:
        _nothing_listed(args)
        return EXIT_OK
    width = None if args.wide else terminal_width()
    for line in fit(COLUMNS, [cells(row) for row in rows], width):
        print(line)
    plugins = [name for name in api_names() if name not in API_MODULES]
    if plugins and args.provider is None:
        note = (
            f"plug-in wire formats: {', '.join(plugins)} "
            "(streamfn chat -m FORMAT:MODEL-ID --base-url URL)"
        )
        print("\n".join(textwrap.wrap(note, width)) if width else note)
    if hidden:
        print(f"streamfn: {hidden} retired models not listed (--all lists them)", file=sys.stderr)
    return EXIT_OK


COMMAND = Command(
    "models",
    "list known models with limits and prices; refresh their data from models.dev",
    _configure,
    _run,
    description=(__doc__ or "").replace("``", ""),
)
