"""The ``streamfn`` command line: chat with any model, list models, manage the local one,
replay a recording, serve models over HTTP.

One module per command (`chat`, `models`, `local`, `replay`, `serve`), named
in one static table (`commands`); `main` builds the parser from it. This
package is the composition root: it may import every package and nothing
imports it; it is the only place that puts the local model
(`streamfn.local`), a shell and the server (`streamfn.asgi`, with the local
model as a backend in `serve_local`) together. Each command imports what it
needs when it runs, so ``streamfn --help`` starts fast and works without the
extras.

Errors are one line on stderr saying what failed and what to do; exit codes:
0 success, 1 runtime error (network, model, credentials), 2 usage error,
130 interrupted.
"""

from __future__ import annotations

from .command import (
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_RUNTIME,
    EXIT_USAGE,
    Command,
    CommandError,
)
from .commands import register_command
from .main import build_parser, main
from .model_dir import MODEL_DIR_ENV

__all__ = [
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_RUNTIME",
    "EXIT_USAGE",
    "MODEL_DIR_ENV",
    "Command",
    "CommandError",
    "build_parser",
    "main",
    "register_command",
]
