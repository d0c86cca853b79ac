"""The loop-agnostic client every shell shares: configuration, the keep-alive pool,
the stream pipeline and the loop that performs `streamfn.core.http.drive`'s steps.

The core decides (pure, no ``await``); this package awaits. A shell
(`streamfn.io_trio`, `streamfn.io_asyncio`, `streamfn.io_sync`) subclasses
`ClientBase` with its socket primitives only. The stages a stream passes through
(fallback, Responses upgrade, recovery, paused turns, text tool calls, tool-call
checks, tracing) are one ordered list, `STAGES` in `client/_pipeline.py`.
"""

from ._base import Ambient, ClientBase, ClientSettings
from ._functions import ShellFunctions
from ._partial_output import partial_outputs
from ._pool import Pool, PooledConnection

__all__ = [
    "Ambient",
    "ClientBase",
    "ClientSettings",
    "Pool",
    "PooledConnection",
    "ShellFunctions",
    "partial_outputs",
]
