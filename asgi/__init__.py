"""`streamfn serve`'s ASGI application, written once for both shells.

`App` runs on asyncio (`streamfn.io_asyncio.serve`) or trio
(`streamfn.io_trio.server`); a shell supplies its `Runtime`. The decisions
(routes, guard, auth, parsing, encoders, statuses) are the sans-I/O codec
in `streamfn.core.serve`.
"""

from .app import App
from .contract import Backend, ServerConfig, UnknownModelError
from .runtime import Runtime

__all__ = ["App", "Backend", "Runtime", "ServerConfig", "UnknownModelError"]
