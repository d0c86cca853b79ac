"""Where the commands find the local model: ``--model-dir``, its variable, the cache.

``chat``, ``local`` and ``serve`` share these, so each says the same thing
about a missing model or a missing ``[local]`` extra.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Final

from streamfn.local import LocalModelError
from streamfn.local._provider import LOCAL_EXTRA_HINT, MODEL_DIR_ENV, check_prepared

from ._command import CommandError

__all__ = [
    "LOCAL_EXTRA_HINT",
    "LOCAL_PREFIX",
    "MODEL_DIR_ENV",
    "add_model_dir",
    "model_dir",
    "require_prepared",
]

LOCAL_PREFIX: Final = "local"


def add_model_dir(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--model-dir",
        type=Path,
        metavar="DIR",
        help=f"local model directory (default: ${MODEL_DIR_ENV} or the user cache)",
    )


def model_dir(args: argparse.Namespace) -> Path | None:
    """``--model-dir``, else ``$STREAMFN_LOCAL_MODEL_DIR``, else None (the user cache)."""
    if args.model_dir is not None:
        return Path(args.model_dir)
    env = os.environ.get(MODEL_DIR_ENV)
    return Path(env) if env else None


def require_prepared(directory: Path | None) -> None:
    """`check_prepared`, as the command line reports it."""
    try:
        check_prepared(directory)
    except LocalModelError as exc:
        raise CommandError(str(exc)) from exc
