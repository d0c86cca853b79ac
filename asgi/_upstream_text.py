"""What of an upstream's words may reach a client of the server: no secret, no internal address.

An upstream's error text goes to the client (a 4xx/5xx body, an in-stream
error event), and some upstreams quote the request they refused: a gateway
or proxy echoing ``Authorization: Bearer sk-...``, a header value, a query
key. And the shell's own connect errors name the upstream's ``host:port``,
an address on the operator's network a client has no business learning. So
every `Error` a `ProviderBackend` stream yields is passed through
`UpstreamText`: every configured key and header value the server holds
becomes ``***`` (`streamfn.core._redact.scrub`, the one implementation; the core has
already scrubbed the request's own before it shortened a long error text, and its cuts
never leave part of a word, so no cut key slips past), and a failure that
names the upstream's or its proxy's address (a connect error, a timeout, a
proxy refusal, a body quoting its Host) says "the upstream" instead of the
host, the port and the resolved address, after the operator's log got them
(with the secrets already out).

What is scrubbed is `Error` text; the model's own output (text, tool calls)
is the answer the client asked for and passes as it is.
"""

from __future__ import annotations

import base64
import logging
import re
from collections.abc import AsyncIterator, Iterable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Final
from urllib.parse import urlsplit

import msgspec

from streamfn.core import Error, Event, Model, Options
from streamfn.core._credentials import ENV_KEYS
from streamfn.core._redact import request_secrets, scrub, secret_values
from streamfn.core.http._proxy_env import proxy_for
from streamfn.core.serve._status import for_the_client

__all__ = ["UpstreamText", "configured_keys"]

log = logging.getLogger("streamfn")

#: what an upstream's (or its proxy's) address becomes in a client's error message
UPSTREAM: Final = "the upstream"
#: a socket address as the OS's errors print it, ``('10.0.0.5', 8000)`` (the resolved
#: address of a named upstream, which scrubbing its name leaves)
_SOCKET_ADDRESS: Final = re.compile(r"\(\s*'[^']*',\s*\d+[^)]*\)")
#: key variables the providers' table does not name but a server reads
_MORE_KEY_VARIABLES = ("AWS_SESSION_TOKEN",)


def configured_keys(environ: Mapping[str, str], variables: Iterable[str] = ()) -> frozenset[str]:
    """Every key the server could send: the providers' variables and ``variables``."""
    names = {name for group in ENV_KEYS.values() for name in group}
    names.update(_MORE_KEY_VARIABLES, variables)
    return secret_values(environ.get(name) for name in names)


def _proxy_credentials(authorization: str | None) -> list[str]:
    """A proxy's ``Basic`` header value, its token and the password inside it."""
    if not authorization:
        return []
    token = authorization.removeprefix("Basic ")
    try:
        password = base64.b64decode(token).decode().partition(":")[2]
    except ValueError:  # binascii.Error and UnicodeDecodeError alike
        password = ""
    return [authorization, token, password]


class UpstreamText:
    """The scrubbing for one upstream request: its secrets and its internal addresses."""

    def __init__(
        self,
        model: Model,
        options: Options,
        environ: Mapping[str, str],
        keys: frozenset[str],
        variables: tuple[str, ...] | None = None,
    ) -> None:
        """``keys``: every configured key (`configured_keys`); ``model`` and ``options``
        add this request's key, header values, URL key and addresses. ``variables``: where
        the operator keeps this model's key (None: the provider's usual variables), named
        to the client when the upstream refuses it."""
        parts = urlsplit(options.base_url or model.base_url)
        values: list[str] = []
        hosts: list[str] = []
        if parts.hostname:
            port = parts.port or (443 if parts.scheme == "https" else 80)
            hosts += [f"{parts.hostname}:{port}", parts.hostname]
            try:
                proxy = proxy_for(parts.scheme, parts.hostname, port, environ)
            except ValueError:  # the client reports an unusable proxy itself
                proxy = None
            if proxy is not None:
                values += _proxy_credentials(proxy.authorization)
                hosts += [f"{proxy.host}:{proxy.port}", proxy.host]
        self.secrets = keys | request_secrets(model, options) | secret_values(values)
        self.hosts = tuple(h for h in hosts if h)
        self.model = model.key
        self.variables = ENV_KEYS.get(model.provider, ()) if variables is None else variables
        self.all_of = variables is None and model.provider == "bedrock"  # a set of variables

    def event(self, event: Event) -> Event:
        """``event`` as a client may see it (only an `Error` carries upstream text)."""
        if not isinstance(event, Error):
            return event
        message = scrub(event.message, self.secrets)
        if any(host in message for host in self.hosts):
            # the operator's log gets the address; the client gets what happened
            log.warning("upstream failure for %s: %s", self.model, message)
            message = _SOCKET_ADDRESS.sub(UPSTREAM, scrub(message, self.hosts, UPSTREAM))
        if message != event.message:
            event = msgspec.structs.replace(event, message=message)
        # a refused key: the upstream's words (scrubbed) to the log, the fix to the client
        return for_the_client(event, self.model, self.variables, all_of=self.all_of)

    def wrap(
        self, opened: AbstractAsyncContextManager[AsyncIterator[Event]]
    ) -> AbstractAsyncContextManager[AsyncIterator[Event]]:
        """The stream ``opened`` gives, with every event passed through `event`."""
        return _scrubbed(opened, self)

    def batch(self, events: list[Event]) -> list[Event]:
        """A batch as a client may see it. An `Error` is always a stream's last event
        (the core ends every stream with it), so only a batch's last event can be one."""
        last = events[-1]
        if isinstance(last, Error):
            return [*events[:-1], self.event(last)]
        return events

    def wrap_batches(
        self, opened: AbstractAsyncContextManager[AsyncIterator[list[Event]]]
    ) -> AbstractAsyncContextManager[AsyncIterator[list[Event]]]:
        """The batches ``opened`` gives, each passed through `batch`."""
        return _scrubbed_batches(opened, self)


@asynccontextmanager
async def _scrubbed(
    opened: AbstractAsyncContextManager[AsyncIterator[Event]], text: UpstreamText
) -> AsyncIterator[AsyncIterator[Event]]:
    async with opened as events:
        yield _Scrubbing(events, text)


class _Scrubbing:
    """An event iterator through `UpstreamText.event` (a class, not a generator: nothing
    is left for a garbage collector to finalise on either event loop)."""

    def __init__(self, events: AsyncIterator[Event], text: UpstreamText) -> None:
        self._events = events
        self._text = text

    def __aiter__(self) -> _Scrubbing:
        return self

    async def __anext__(self) -> Event:
        return self._text.event(await self._events.__anext__())


@asynccontextmanager
async def _scrubbed_batches(
    opened: AbstractAsyncContextManager[AsyncIterator[list[Event]]], text: UpstreamText
) -> AsyncIterator[AsyncIterator[list[Event]]]:
    async with opened as batches:
        yield _ScrubbingBatches(batches, text)


class _ScrubbingBatches:
    """A batch iterator through `UpstreamText.batch` (a class, as `_Scrubbing` is)."""

    def __init__(self, batches: AsyncIterator[list[Event]], text: UpstreamText) -> None:
        self._batches = batches
        self._text = text

    def __aiter__(self) -> _ScrubbingBatches:
        return self

    async def __anext__(self) -> list[Event]:
        return self._text.batch(await self._batches.__anext__())
