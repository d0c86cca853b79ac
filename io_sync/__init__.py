"""Blocking shell: HTTP/1.1 over h11 for streamfn calls, without an event loop."""

from .client import Client, complete, default_client, stream

__all__ = ["Client", "complete", "default_client", "stream"]
