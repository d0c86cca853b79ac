"""Trio shell: HTTP/1.1 over h11 for streamfn calls.

`serve` runs a `streamfn.asgi.App` on a listening socket (the ``[serve]`` extra:
hypercorn); it is imported on first use, so a program that only streams does
not import the server.
"""

from typing import TYPE_CHECKING

from streamfn._extras import missing_extra as _missing_extra
from streamfn._lazy_face import lazy_face as _lazy_face

try:  # the [trio] extra, named when it is missing
    import trio as _trio  # noqa: F401
except ModuleNotFoundError as _missing:
    raise _missing_extra("streamfn.io_trio", _missing, "trio") from None
from streamfn.io_common._catalog_cache import install_loader as _install_catalog_loader

from ._client import Client, complete, count_tokens, default_client, stream
from ._local import stream_local

if TYPE_CHECKING:
    from ._server import serve

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

__getattr__, __dir__ = _lazy_face(__name__, {"serve": "._server"})
