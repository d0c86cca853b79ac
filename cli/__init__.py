"""The ``streamfn`` command line: chat with any model, list models, manage the local one,
replay a recording, serve models over HTTP.

One module per command (`_chat`, `_models`, `_local`, `_replay`, `_serve`), named
in one static table (`_commands`); `main` builds the parser from it. This
package is the composition root: it may import every package and nothing
imports it; it is the only place that puts the local model
(`streamfn.local`), a shell and the server (`streamfn.asgi`, with the local
model as a backend in `_serve_local`) together. Each command imports what it
needs when it runs, so ``streamfn --help`` starts fast and works without the
extras.

Errors are one line on stderr saying what failed and what to do; exit codes:
0 success, 1 runtime error (network, model, credentials), 2 usage error,
130 interrupted.
"""

from __future__ import annotations

from ._main import main

__all__ = ["main"]
