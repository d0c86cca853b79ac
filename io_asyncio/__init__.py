"""Asyncio shell: HTTP/1.1 over h11 for streamfn calls.

`serve` runs a `streamfn.asgi.App` on a listening socket (the ``[serve]`` extra:
hypercorn); it is imported on first use, so a program that only streams does
not import the server.
"""

from typing import TYPE_CHECKING

from streamfn._lazy_face import lazy_face as _lazy_face
from streamfn.io_common._catalog_cache import install_loader as _install_catalog_loader

from ._client import Client, complete, count_tokens, default_client, stream
from ._local import stream_local

if TYPE_CHECKING:
    from ._serve import serve

# the model registry takes a newer catalogue (`streamfn models --refresh`) on first use
_install_catalog_loader()

__all__ = [
    "Client",
    "complete",
    "count_tokens",
    "default_client",
    "serve",
    "stream",
    "stream_local",
]

__getattr__, __dir__ = _lazy_face(__name__, {"serve": "._serve"})
