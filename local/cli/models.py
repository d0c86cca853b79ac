"""``streamfn models``: the known models with their context windows and prices."""

from __future__ import annotations

import argparse

from .command import EXIT_OK, EXIT_USAGE, Command, CommandError
from .model_dir import LOCAL_PREFIX

__all__ = ["COMMAND"]


def _configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--provider", help="only this provider's models")


def _price(value: float) -> str:
    return f"${value:g}" if value else "-"


def _run(args: argparse.Namespace) -> int:
    from streamfn.core.models import list_models, provider_names

    from ..fetch import DEFAULT_MODEL_NAME, default_model_dir, is_prepared

    known = [*provider_names(), LOCAL_PREFIX]
    if args.provider is not None and args.provider not in known:
        raise CommandError(
            f"unknown provider {args.provider!r}; known providers: {', '.join(sorted(known))}",
            EXIT_USAGE,
        )

    rows = [("model", "context", "$/M in", "$/M out")]
    for model in list_models(args.provider):
        rows.append(
            (
                model.key,
                f"{model.context_window:,}",
                _price(model.price_input),
                _price(model.price_output),
            )
        )
    if args.provider in (None, LOCAL_PREFIX):
        state = "prepared" if is_prepared(default_model_dir()) else "prepared on first use"
        rows.append((f"local:{DEFAULT_MODEL_NAME}", "8,192", "free", f"free ({state})"))
    if len(rows) == 1:
        print(
            f"{args.provider} has no catalogue entries; any model id works: "
            f"streamfn chat -m {args.provider}:MODEL-ID (prices unknown)"
        )
        return EXIT_OK
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    for row in rows:
        print(
            "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        )
    return EXIT_OK


COMMAND = Command("models", "list known models with context windows and prices", _configure, _run)
