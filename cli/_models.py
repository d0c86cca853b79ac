"""``streamfn models``: the known models, and where their data comes from.

Lists the catalogue in use (limits, prices, reasoning, release date, and
``deprecated`` with the end-of-life date for a model its provider is retiring,
``retired`` with the date for one it has retired);
``--source`` says which catalogue that is; ``--refresh`` fetches models.dev's
current data into the user cache (the only network access streamfn makes for
its catalogue) and ``--from FILE`` does the same from a copy, offline.
"""

from __future__ import annotations

import argparse
import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from ._command import EXIT_OK, EXIT_USAGE, Command, CommandError
from ._flags import seconds
from ._model_dir import LOCAL_PREFIX

if TYPE_CHECKING:
    from streamfn.core._model_spec import Model

__all__ = ["COMMAND"]

_EPILOG = """\
examples:
  streamfn models --provider anthropic      one provider's models
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
    parser.add_argument("--provider", help="only this provider's models")
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


def _price(value: float) -> str:
    return f"${value:g}" if value else "-"


def _status(model: Model) -> str:
    """``retired``/``deprecated``, with the date when the data has one."""
    if model.retired:
        return f"retired {model.end_of_life}" if model.end_of_life else "retired"
    if not model.deprecated:
        return ""
    return f"deprecated, ends {model.end_of_life}" if model.end_of_life else "deprecated"


def _update(args: argparse.Namespace) -> None:
    """``--refresh``/``--from``: write the new catalogue to the cache, then use it."""
    from streamfn.io_common._catalog_cache import (
        DEADLINE,
        DEFAULT_URL,
        ENV_URL,
        CatalogError,
        cache_path,
        load_user_catalog,
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
    from streamfn.core._models import catalog_info
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


def _run(args: argparse.Namespace) -> int:
    from streamfn.core._call import API_MODULES, api_names
    from streamfn.core._models import list_models, provider_names
    from streamfn.local._fetch import DEFAULT_MODEL_NAME, default_model_dir, is_prepared

    for given, flag in ((args.url, "--url"), (args.timeout, "--timeout")):
        if given and not args.refresh:
            raise CommandError(f"{flag} goes with --refresh", EXIT_USAGE)
    if args.refresh or args.from_file:
        _update(args)
    if args.source:
        _print_source()
        return EXIT_OK
    known = [*provider_names(), LOCAL_PREFIX]
    if args.provider is not None and args.provider not in known:
        raise CommandError(
            f"unknown provider {args.provider!r}; known providers: {', '.join(sorted(known))}",
            EXIT_USAGE,
        )

    rows = [("model", "context", "output", "$/M in", "$/M out", "reasoning", "released", "status")]
    for model in list_models(args.provider):
        rows.append(
            (
                model.key,
                f"{model.context_window:,}",
                f"{model.max_output:,}",
                _price(model.price_input),
                _price(model.price_output),
                "yes" if model.reasoning else "",
                model.release_date,
                _status(model),
            )
        )
    if args.provider in (None, LOCAL_PREFIX):
        state = "prepared" if is_prepared(default_model_dir()) else "prepared on first use"
        rows.append(
            (f"local:{DEFAULT_MODEL_NAME}", "8,192", "", "free", f"free ({state})", "", "", "")
        )
    plugins = [name for name in api_names() if name not in API_MODULES]
    if len(rows) == 1:
        how = "a plug-in wire format; " if args.provider in plugins else ""
        print(
            f"{args.provider} has no catalogue entries ({how}any model id works): "
            f"streamfn chat -m {args.provider}:MODEL-ID (prices unknown)"
        )
        return EXIT_OK
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        print(
            "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        )
    if plugins and args.provider is None:
        print(
            f"plug-in wire formats: {', '.join(plugins)} "
            "(streamfn chat -m FORMAT:MODEL-ID --base-url URL)"
        )
    return EXIT_OK


COMMAND = Command(
    "models",
    "list known models with limits and prices; refresh their data from models.dev",
    _configure,
    _run,
    description=(__doc__ or "").replace("``", ""),
)
