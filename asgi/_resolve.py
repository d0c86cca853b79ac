"""The server's DNS lookups for client input URLs (the I/O half of `input_urls`).

`streamfn.core.serve._input_urls` judges a URL from its text and lists the DNS
names it needs resolved; this module resolves them (``getaddrinfo`` on a worker
thread, within `RESOLVE_TIMEOUT`) and hands the addresses back to be judged. A
name that does not resolve gets no addresses, which the core refuses.

The upstream fetches the URL, not this server, and it resolves the name again
(and may follow redirects) on its own network: this check stops a client naming
an intranet host, not a hostile DNS server that answers differently the second
time. That residual risk is stated in the ``--allow-input-urls`` help and docs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from streamfn.core.serve._client_inputs import hosts_to_resolve
from streamfn.core.serve._inbound import ClientRequest
from streamfn.core.serve._routes import check_input_hosts
from streamfn.io_common._resolver import Resolver, system_resolver

from ._runtime import Runtime

__all__ = ["RESOLVE_TIMEOUT", "Resolver", "check_input_urls", "resolve_all", "system_resolver"]

#: the longest the server waits for all of one request's names to resolve
RESOLVE_TIMEOUT: Final = 5.0


def resolve_all(resolver: Resolver, names: Sequence[str]) -> dict[str, list[str]]:
    """``names`` resolved one after another (a request carries a handful at most)."""
    return {name: list(resolver(name)) for name in names}


async def check_input_urls(runtime: Runtime, resolver: Resolver, request: ClientRequest) -> None:
    """Resolve the DNS names of ``request``'s input URLs (on a worker thread, within
    `RESOLVE_TIMEOUT`) and refuse with a 400 any that is not public only; the core
    judged the URLs' text already, at parse time."""
    names = hosts_to_resolve(request)
    if not names:
        return
    resolved: dict[str, list[str]] | None
    try:
        resolved = await runtime.within(
            RESOLVE_TIMEOUT, lambda: runtime.to_thread(resolve_all, resolver, list(names))
        )
    except TimeoutError:
        resolved = None
    check_input_hosts(names, resolved)
