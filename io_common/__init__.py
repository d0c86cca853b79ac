"""What the three shells (`streamfn.io_trio`, `streamfn.io_asyncio`, `streamfn.io_sync`)
share and none of them owns: loop-agnostic code that touches the machine.

- `_process`: what a client takes from the process unless told otherwise
  (environment, randomness, wall clock, TLS defaults);
- `_sockets`: the socket checks every shell makes (an IP literal's family, a
  zero-timeout readiness poll, the bytes a peer acknowledged, a reset on close);
- `_connection_cap`: the server's cap on open connections and its 503, which
  both event-loop shells enforce;
- `_catalog_cache`: a newer model catalogue than the built-in one, cached in
  the user's cache directory, which every shell installs as the
  registry's loader when it is imported; `_catalog_fetch` fetches it for
  ``streamfn models --refresh`` (bounded in size and time, redirects judged);
- `_resolver`: the system resolver as the address checks want it (a name -> its
  addresses), for the server's input URLs and the refresh's redirects;
- `_local_events`: the local model's events as an async iterator, for the two
  event-loop shells' adapters.

The sans-I/O core reads no environment and opens no socket, so none of this
can live there; each shell is one event loop's (or none's) I/O, so it cannot
live in one shell either. Standard library only, no event loop imported:
importing this package costs the blocking shell nothing.
"""

from ._catalog_cache import load_user_catalog

__all__ = ["load_user_catalog"]
