"""What the server is given: a `Backend` that opens event streams, and its `ServerConfig`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Protocol

import msgspec

from streamfn.core import Context, Event, Model, Options, TokenCount, UnknownModel, estimate_tokens
from streamfn.core.dialects._request_fields import ClientRequest
from streamfn.core.serve._guard import LOOPBACK_HOSTS

__all__ = ["Backend", "ServerConfig", "UnknownModelError", "count_tokens", "open_batches"]


#: the longest stream a server may allow (a day)
MAX_STREAM_SECONDS = 86_400.0


class UnknownModelError(UnknownModel):
    """The backend serves no model by that name; becomes a 404 naming the choices."""


class Backend(Protocol):
    """Where events come from: the local model, upstream providers, or a recording.

    ``stream`` returns an async context manager yielding an async iterator, which
    runs on whichever event loop serves the app (a backend written with only
    ``async``/``await`` serves both shells). A backend with an ``aclose``
    coroutine has it awaited at shutdown. A backend with a ``stream_batches``
    method (same arguments; an iterator of non-empty event lists, one per read)
    is relayed a list at a time (`open_batches`), which the providers' backend
    does: one step, one encoding and one write per upstream read. A backend with a
    ``count_tokens`` coroutine (``model, context, options`` -> `TokenCount`) counts
    for the token counting routes; without one they answer an estimate, marked so.
    """

    def list_models(self) -> list[str]: ...

    def max_output(self, model: str) -> int | None:
        """The most tokens ``model`` may generate per request (None: no stated limit).

        Raises `UnknownModelError` for a model it does not serve, so a bad name
        is a 404 before any response starts.
        """
        ...

    def stream(
        self, model: str, context: Context, options: Options
    ) -> AbstractAsyncContextManager[AsyncIterator[Event]]: ...


def open_batches(
    backend: Backend, model: str, context: Context, options: Options
) -> AbstractAsyncContextManager[AsyncIterator[list[Event]]]:
    """``backend``'s stream as lists of events: its own ``stream_batches`` where it has
    one, else each event of its ``stream`` as a list of one."""
    batched = getattr(backend, "stream_batches", None)
    if batched is not None:
        opened: AbstractAsyncContextManager[AsyncIterator[list[Event]]] = batched(
            model, context, options
        )
        return opened
    return _one_by_one(backend.stream(model, context, options))


async def count_tokens(backend: Backend, request: ClientRequest) -> TokenCount:
    """The input tokens of ``request``: the backend's own count where it has one (which
    may itself be an estimate), else `estimate_tokens`'s."""
    counter = getattr(backend, "count_tokens", None)
    if counter is not None:
        counted: TokenCount = await counter(request.model, request.context, request.options)
        return counted
    model = Model(id=request.model, provider="", api="", base_url="")
    return estimate_tokens(model, request.context)


@asynccontextmanager
async def _one_by_one(
    opened: AbstractAsyncContextManager[AsyncIterator[Event]],
) -> AsyncIterator[AsyncIterator[list[Event]]]:
    async with opened as events:
        yield _Singletons(events)


class _Singletons:
    """Each event as a list of one (a class, not a generator: nothing left to finalise)."""

    def __init__(self, events: AsyncIterator[Event]) -> None:
        self._events = events

    def __aiter__(self) -> _Singletons:
        return self

    async def __anext__(self) -> list[Event]:
        return [await self._events.__anext__()]


class ServerConfig(msgspec.Struct, kw_only=True):
    """Limits and policies; ``api_key`` None means no authentication (loopback use).

    ``max_concurrency`` backend streams run at once (upstream calls are I/O
    and cheap to hold open, so the default is high); up to ``max_queue`` more
    requests wait for a slot, counting those still sending their body, and
    beyond that a request is a 429. A streaming request waits ``head_wait``
    seconds for the model's first event so early errors are HTTP statuses;
    then it gets its headers and an SSE comment, and keep-alives every
    ``keepalive_interval`` seconds. ``allowed_hosts`` None accepts any
    ``Host`` (a server bound to a public address); ``cors_origins`` empty
    sends no CORS headers and refuses requests carrying an ``Origin``.
    ``max_buffered_bytes`` bounds the requests held in memory at once, whatever
    their number: each body as it arrives, then its parsed form (charged from
    above by the parsed request's cost estimate) until the request ends;
    past it a request is a 503 with ``Retry-After`` (a 413 if it alone would
    not fit), so many slow or large requests cannot exhaust memory.
    ``max_unsent_bytes`` bounds the events waiting for one client: past it the
    model's stream waits for the client to read (logged once per request).
    ``send_timeout`` bounds that wait: when a write waits and the client takes
    no bytes of the response for that long, the server (its own hypercorn
    hosting, either shell) resets the connection, which cancels the upstream
    call and frees the slot. Must be more than 0. ``max_stream_seconds`` bounds a
    request from the moment it was read to its end, however its upstream paces it (one delta
    just inside its idle timeout, again and again): then the stream ends with a
    terminal error naming the bound, and its upstream call is closed.
    """

    api_key: str | None = None
    #: the operator's key for the dashboard and admin routes; a client key never opens
    #: them, and with none set they are not served at all
    admin_key: str | None = None
    max_body_bytes: int = 8 << 20
    max_buffered_bytes: int = 256 << 20
    max_unsent_bytes: int = 1 << 20
    max_concurrency: int = 1024
    max_queue: int = 1024
    keepalive_interval: float = 15.0
    head_wait: float = 1.0
    body_timeout: float = 30.0
    send_timeout: float = 30.0
    max_stream_seconds: float = 3600.0
    shutdown_grace: float = 10.0
    allowed_hosts: tuple[str, ...] | None = LOOPBACK_HOSTS
    cors_origins: tuple[str, ...] = ()
    #: append web-search sources as a last text block for dialects with no field for them
    append_sources: bool = False
    #: server-tool types (``web_search``, ``code_execution``) clients may enable; they run
    #: and are billed with the server's credentials, so none by default (a 400 naming it)
    allow_server_tools: tuple[str, ...] = ()
    #: pass client image and document URLs to upstreams (which fetch them); off, since
    #: an upstream on the operator's network would fetch intranet addresses for clients
    allow_input_urls: bool = False
    #: the model of a front-end request (``/v1/ui/chat``, ``/v1/agui``) that names none
    default_model: str | None = None

    def __post_init__(self) -> None:
        if not 0 < self.max_stream_seconds <= MAX_STREAM_SECONDS:
            raise ValueError(
                f"max_stream_seconds must be more than 0 and at most {MAX_STREAM_SECONDS:g} "
                f"seconds (a day), got {self.max_stream_seconds}: a client key's reservation "
                "outlasts the longest stream, and a crashed worker's holds its budget as long"
            )
        if not self.send_timeout > 0:
            raise ValueError(f"send_timeout must be more than 0 seconds, got {self.send_timeout}")
        if self.admin_key is not None and self.admin_key == self.api_key:
            raise ValueError("admin_key must differ from api_key: every client could open /admin")

    def __repr__(self) -> str:
        key = "***" if self.api_key else None
        admin = "***" if self.admin_key else None
        return (
            f"ServerConfig(api_key={key}, admin_key={admin}, max_body_bytes={self.max_body_bytes}, "
            f"max_concurrency={self.max_concurrency}, max_queue={self.max_queue}, "
            f"allowed_hosts={self.allowed_hosts}, cors_origins={self.cors_origins})"
        )
