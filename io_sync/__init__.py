"""Blocking shell: HTTP/1.1 over h11 for streamfn calls, without an event loop."""

from streamfn.io_common._catalog_cache import install_loader as _install_catalog_loader

from ._client import Client, complete, count_tokens, default_client, stream

# the model registry takes a newer catalogue (`streamfn models --refresh`) on first use
_install_catalog_loader()

__all__ = ["Client", "complete", "count_tokens", "default_client", "stream"]
