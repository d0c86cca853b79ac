"""`streamfn serve`'s ASGI application, written once for both shells.

`App` runs on asyncio (`streamfn.io_asyncio.serve`) or trio
(`streamfn.io_trio.serve`); a shell supplies its `Runtime`. The decisions
(routes, guard, auth, parsing, encoders, statuses) are the sans-I/O codec
in `streamfn.core.serve`.
"""

from ._app import App
from ._backends import ProviderBackend, RouterBackend, ServedModel
from ._contract import Backend, ServerConfig, UnknownModelError
from ._runtime import Runtime

__all__ = [
    "App",
    "Backend",
    "ProviderBackend",
    "RouterBackend",
    "Runtime",
    "ServedModel",
    "ServerConfig",
    "UnknownModelError",
]
