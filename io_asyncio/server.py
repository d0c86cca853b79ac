"""`streamfn serve`: any model streamfn reaches, served in the dialect the client speaks.

A plain ASGI application (no web framework) run by hypercorn, which is
built on h11 like our shells. Routes:

- ``POST /v1/chat/completions``: OpenAI Chat Completions, streaming or not.
- ``POST /v1/messages``: Anthropic Messages, streaming or not.
- ``POST /v1/stream``: the native proxy format (our events as SSE).
- ``POST /v1/agent/stream``: the same request, answered in the agent-server
  SSE contract (`streamfn.io_asyncio.agent_route`).
- ``GET /v1/models`` (OpenAI or, with an ``anthropic-version`` header,
  Anthropic shape) and ``GET /health``.

The trust boundary: the server holds the provider keys, its clients are not
trusted. A client chooses what to generate, never where a request goes or
how often it is sent (`streamfn.core.serve.inbound` rejects such fields by name);
`streamfn.io_asyncio.guard` keeps web pages out (Host, Origin, Content-Type).
Every bad request is a 4xx in the client's own error shape.

Every request runs the backend in a producer task; the response loop sends
what it produces, a keep-alive while the model is silent, and stops the
producer at once when the client disconnects (streaming or not), so an
abandoned request never keeps a local generation or an upstream connection
alive. Errors that come before any output (within ``head_wait``) become HTTP
errors in the client's own error shape (so SDK clients raise their usual
exceptions and retry what is retryable); after that a streaming response has
sent its headers and an SSE comment, and errors are sent in-stream the way
each client expects. Shutdown lets streams finish for a grace period and
then ends each with a terminal error in its dialect.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from contextlib import AbstractAsyncContextManager
from typing import Any, ClassVar, Final, Protocol

import msgspec

from streamfn.core.accumulate import accumulate
from streamfn.core.credentials import MissingCredentials
from streamfn.core.events import (
    Done,
    Error,
    ErrorKind,
    Event,
    Start,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
)
from streamfn.core.messages import Context
from streamfn.core.options import Options
from streamfn.core.providers.proxy import encode_proxy_event
from streamfn.core.serve.encode_anthropic import (
    AnthropicEncoder,
    anthropic_error_body,
    anthropic_error_type,
    anthropic_message_body,
)
from streamfn.core.serve.encode_openai import (
    OpenAIChatEncoder,
    openai_completion_body,
    openai_error_type,
)
from streamfn.core.serve.grounding import append_sources, appending_sources
from streamfn.core.serve.inbound import (
    BadRequest,
    ClientRequest,
    parse_anthropic_request,
    parse_native_request,
    parse_openai_request,
)
from streamfn.core.structured import StructuredOutputUnsupported
from streamfn.core.wire.sse import encode_sse

from .agent_route import AGENT_PATH, agent_encoder
from .guard import (
    LOOPBACK_HOSTS,
    cors_headers,
    header,
    host_allowed,
    is_json,
    preflight_headers,
)

__all__ = ["App", "Backend", "EventsBackend", "ServerConfig", "UnknownModelError"]

log = logging.getLogger("streamfn")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

_SSE_HEADERS: Final = [
    (b"content-type", b"text/event-stream; charset=utf-8"),
    (b"cache-control", b"no-cache"),
    (b"x-accel-buffering", b"no"),
]
_JSON: Final = [(b"content-type", b"application/json")]
_json: Final = msgspec.json.Encoder()
#: most events coalesced into one write
_MAX_BATCH: Final = 256
#: the native stream's keep-alive: an SSE comment every client ignores
_KEEP_ALIVE: Final = encode_sse(comment="keep-alive")
#: the first bytes of a stream whose model has not spoken yet: every SSE client ignores it
_OPENED: Final = encode_sse(comment="streamfn: waiting for the model")
#: bodies above this size are parsed on a worker thread, off the event loop
_PARSE_INLINE_BYTES: Final = 256 << 10
#: the routes and the methods each answers
_ROUTES: Final = {
    "/v1/chat/completions": ("POST",),
    "/v1/messages": ("POST",),
    "/v1/stream": ("POST",),
    AGENT_PATH: ("POST",),
    "/v1/models": ("GET",),
    "/health": ("GET",),
    "/healthz": ("GET",),
}
_PARSERS: Final[dict[str, Callable[[bytes], ClientRequest]]] = {
    "/v1/chat/completions": parse_openai_request,
    "/v1/messages": parse_anthropic_request,
    "/v1/stream": parse_native_request,
    AGENT_PATH: parse_native_request,
}
#: client dialects with no field for web-search sources (see `streamfn.core.serve.grounding`)
_SOURCELESS: Final = ("/v1/chat/completions", AGENT_PATH)


class UnknownModelError(LookupError):
    """The backend serves no model by that name; becomes a 404 naming the choices."""


class Backend(Protocol):
    """Where events come from: the local model, upstream providers, or a recording."""

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
    ``max_buffered_bytes`` bounds the request bodies held in memory at once
    (read or being parsed), whatever their number: past it a request is a 503
    with ``Retry-After``, so many slow or large bodies cannot exhaust memory.
    """

    api_key: str | None = None
    max_body_bytes: int = 8 << 20
    max_buffered_bytes: int = 256 << 20
    max_concurrency: int = 1024
    max_queue: int = 1024
    keepalive_interval: float = 15.0
    head_wait: float = 1.0
    body_timeout: float = 30.0
    shutdown_grace: float = 10.0
    allowed_hosts: tuple[str, ...] | None = LOOPBACK_HOSTS
    cors_origins: tuple[str, ...] = ()
    #: append web-search sources as a last text block for dialects with no field for them
    append_sources: bool = False

    def __repr__(self) -> str:
        key = "***" if self.api_key else None
        return (
            f"ServerConfig(api_key={key}, max_body_bytes={self.max_body_bytes}, "
            f"max_concurrency={self.max_concurrency}, max_queue={self.max_queue}, "
            f"allowed_hosts={self.allowed_hosts}, cors_origins={self.cors_origins})"
        )


class _HTTPError(Exception):
    def __init__(
        self,
        status: int,
        kind: str,
        message: str,
        retry_after: float | None = None,
        headers: list[tuple[bytes, bytes]] | None = None,
    ):
        super().__init__(message)
        self.status = status
        self.kind = kind
        self.message = message
        self.retry_after = retry_after
        self.headers = headers or []


#: what HTTP status an error before any output becomes, by kind
_STATUS_FOR_KIND: Final = {
    ErrorKind.THROTTLED: 429,
    ErrorKind.CONTEXT_OVERFLOW: 400,
    ErrorKind.INVALID_REQUEST: 400,
    ErrorKind.CONTENT_FILTER: 400,
    ErrorKind.AUTH: 502,  # the upstream rejected *our* key: not the client's fault
    ErrorKind.NETWORK: 502,
    ErrorKind.PROTOCOL: 502,
    ErrorKind.LIMIT: 502,
}
#: statuses a backend error keeps as they are (not the client's nor the upstream's fault)
_OWN_STATUSES: Final = frozenset({404, 503})


#: generic kinds of our own errors that mean what an ErrorKind means, so each
#: dialect names them as it names that kind
_KIND_AS_ERROR_KIND: Final = {
    "auth": ErrorKind.AUTH,
    "invalid_request": ErrorKind.INVALID_REQUEST,
    "overloaded": ErrorKind.THROTTLED,
    "unavailable": ErrorKind.NETWORK,
}


class _Dialect:
    """How one client API frames errors and streams."""

    #: our generic kinds no ErrorKind covers -> this dialect's word for them
    extra_words: ClassVar[dict[str, str]] = {
        "not_found": "model_not_found",
        "too_large": "invalid_request_error",
        "forbidden": "permission_denied",
        "timeout": "invalid_request_error",
    }

    def error_body(self, kind: str, message: str) -> bytes:
        return _json.encode({"error": {"message": message, "type": kind, "code": kind}})

    def error_type(self, kind: ErrorKind | None) -> str:
        return openai_error_type(kind)

    def word(self, kind: str) -> str:
        """This dialect's error type for one of our generic kinds (others pass through)."""
        error_kind = _KIND_AS_ERROR_KIND.get(kind)
        if error_kind is not None:
            return self.error_type(error_kind)
        return self.extra_words.get(kind, kind)


class _AnthropicDialect(_Dialect):
    extra_words: ClassVar[dict[str, str]] = {
        "not_found": "not_found_error",
        "too_large": "request_too_large",
        "forbidden": "permission_error",
        "timeout": "invalid_request_error",
    }

    def error_body(self, kind: str, message: str) -> bytes:
        return _json.encode(anthropic_error_body(kind, message))

    def error_type(self, kind: ErrorKind | None) -> str:
        return anthropic_error_type(kind)


_OPENAI: Final = _Dialect()
_ANTHROPIC: Final = _AnthropicDialect()


def _dialect_for(path: str) -> _Dialect:
    return _ANTHROPIC if path == "/v1/messages" else _OPENAI


def _for_the_client(event: Event, model: str) -> Event:
    """``event`` as an untrusted client may see it: an upstream's refusal of the server's
    own key can quote part of it ("Incorrect API key provided: sk-...abcd"), so its
    words stay in the log."""
    if isinstance(event, Error) and event.kind == ErrorKind.AUTH:
        log.error("upstream refused the server's credentials for %s: %s", model, event.message)
        return msgspec.structs.replace(
            event, message="the upstream refused the server's credentials for this model"
        )
    return event


def _shutting_down() -> Error:
    return Error(
        message="server is shutting down; retry on another instance or in a moment",
        kind=ErrorKind.NETWORK,
        status=503,
        retry_after=1,
    )


class App:
    """The ASGI application. One instance serves many concurrent requests."""

    def __init__(self, backend: Backend, config: ServerConfig | None = None) -> None:
        self.backend = backend
        self.config = config or ServerConfig()
        #: backend streams running now
        self.active = 0
        #: requests admitted: reading their body, waiting for a slot, or running
        self.admitted = 0
        #: bytes of request bodies held right now (see ServerConfig.max_buffered_bytes)
        self.buffered = 0
        self._slots = asyncio.Semaphore(self.config.max_concurrency)
        self._closing = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._abort = asyncio.Event()
        self._shutdown: asyncio.Task[None] | None = None

    # -- ASGI entry -------------------------------------------------------------
    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        path = scope.get("path", "")
        dialect = _dialect_for(path)
        headers = scope.get("headers", [])
        origin = header(headers, b"origin")
        cors = cors_headers(origin, self.config.cors_origins)
        if cors:
            send = _adding_headers(send, cors)
        try:
            await self._route(scope, receive, send, path, origin, bool(cors))
        except _HTTPError as exc:
            await self._send_error(send, dialect, exc)

    async def _route(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        path: str,
        origin: bytes | None,
        cors: bool,
    ) -> None:
        headers = scope.get("headers", [])
        method = scope.get("method", "GET")
        if not host_allowed(headers, self.config.allowed_hosts):
            raise _HTTPError(
                400,
                "invalid_request",
                "this server answers only to a loopback Host (start it with --allowed-host "
                "NAME to accept another name)",
            )
        if origin is not None and not cors:
            raise _HTTPError(
                403,
                "forbidden",
                "requests from web pages are refused (start the server with --cors-origin "
                "ORIGIN to allow one)",
            )
        methods = _ROUTES.get(path)
        if methods is None:
            raise _HTTPError(404, "not_found", f"no route for {method} {path}")
        if method == "OPTIONS" and cors:
            preflight = preflight_headers(headers, self.config.cors_origins)
            await send({"type": "http.response.start", "status": 204, "headers": preflight})
            await send({"type": "http.response.body", "body": b""})
            return
        if method not in methods:
            raise _HTTPError(
                405,
                "invalid_request",
                f"{path} answers {', '.join(methods)}, not {method}",
                headers=[(b"allow", ", ".join(methods).encode())],
            )
        if path in ("/health", "/healthz"):
            status = {"status": "ok", "active_streams": self.active, "admitted": self.admitted}
            await self._send_json(send, 200, status)
        elif path == "/v1/models":
            self._authenticate(scope)
            await self._send_json(send, 200, self._models_body(scope))
        else:
            self._authenticate(scope)
            if not is_json(headers):
                raise _HTTPError(
                    415,
                    "invalid_request",
                    "request body must be sent with Content-Type: application/json",
                )
            await self._completion(receive, send, path)

    async def _send_error(self, send: Send, dialect: _Dialect, exc: _HTTPError) -> None:
        kind = dialect.word(exc.kind)
        headers = list(_JSON) + exc.headers
        if exc.retry_after is not None:
            headers.append((b"retry-after", str(int(exc.retry_after + 0.999)).encode()))
        if exc.status == 401:
            headers.append((b"www-authenticate", b"Bearer"))
        await send({"type": "http.response.start", "status": exc.status, "headers": headers})
        await send({"type": "http.response.body", "body": dialect.error_body(kind, exc.message)})

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.shutdown()
                await send({"type": "lifespan.shutdown.complete"})
                return

    def begin_shutdown(self) -> asyncio.Task[None]:
        """Start `shutdown` without waiting for it (from a signal or a server's trigger)."""
        if self._shutdown is None:
            self._shutdown = asyncio.ensure_future(self._shut_down())
        return self._shutdown

    async def shutdown(self) -> None:
        """Refuse new and queued requests (503), let running ones finish for the grace
        period, then end each with a terminal error in its dialect. Idempotent."""
        await asyncio.shield(self.begin_shutdown())

    async def _shut_down(self) -> None:
        self._closing.set()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._idle.wait(), self.config.shutdown_grace)
        self._abort.set()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._idle.wait(), 2.0)
        # Idle upstream connections belong to this event loop: close them with it.
        aclose = getattr(self.backend, "aclose", None)
        if aclose is not None:
            await aclose()

    # -- request plumbing ---------------------------------------------------------
    def _authenticate(self, scope: Scope) -> None:
        expected = self.config.api_key
        if not expected:
            return
        given = b""
        for name, value in scope.get("headers", []):
            lname = name.lower()
            if lname == b"authorization" and value[:7].lower() == b"bearer ":
                given = value[7:].strip()
            elif lname in (b"x-api-key", b"api-key") and not given:
                given = value.strip()
        if not hmac.compare_digest(given, expected.encode()):
            raise _HTTPError(401, "auth", "invalid or missing API key for this streamfn server")

    async def _read_body(self, receive: Receive, held: list[int]) -> bytes:
        """The whole body, counted in ``held[0]`` and `buffered` as it arrives."""
        cap = self.config.max_body_bytes
        chunks: list[bytes] = []
        size = 0
        try:
            async with asyncio.timeout(self.config.body_timeout):
                while True:
                    message = await receive()
                    if message["type"] == "http.disconnect":
                        raise _HTTPError(400, "invalid_request", "client disconnected")
                    chunk = message.get("body", b"")
                    size += len(chunk)
                    if size > cap:
                        raise _HTTPError(
                            413, "too_large", f"request body larger than {cap} bytes (server limit)"
                        )
                    if self.buffered + len(chunk) > self.config.max_buffered_bytes:
                        raise _HTTPError(
                            503,
                            "overloaded",
                            "server busy: too many request bodies in memory; retry shortly",
                            retry_after=1,
                        )
                    self.buffered += len(chunk)
                    held[0] += len(chunk)
                    chunks.append(chunk)
                    if not message.get("more_body", False):
                        return b"".join(chunks)
        except TimeoutError:
            raise _HTTPError(
                408,
                "timeout",
                f"the request body did not arrive within {self.config.body_timeout:g} s",
            ) from None

    def _models_body(self, scope: Scope) -> dict[str, Any]:
        names = self.backend.list_models()
        anthropic = any(k.lower() == b"anthropic-version" for k, _ in scope.get("headers", []))
        if anthropic:
            data = [
                {"type": "model", "id": n, "display_name": n, "created_at": "1970-01-01T00:00:00Z"}
                for n in names
            ]
            return {
                "data": data,
                "has_more": False,
                "first_id": names[0] if names else None,
                "last_id": names[-1] if names else None,
            }
        return {
            "object": "list",
            "data": [
                {"id": n, "object": "model", "created": 0, "owned_by": "streamfn"} for n in names
            ],
        }

    async def _send_json(self, send: Send, status: int, obj: Any) -> None:
        await send({"type": "http.response.start", "status": status, "headers": list(_JSON)})
        await send({"type": "http.response.body", "body": _json.encode(obj)})

    # -- completions ------------------------------------------------------------------
    async def _parse(self, path: str, body: bytes) -> ClientRequest:
        parse = _PARSERS[path]
        try:
            if len(body) > _PARSE_INLINE_BYTES:  # megabytes of prompt: not on the loop
                return await asyncio.to_thread(parse, body)
            return parse(body)
        except BadRequest as exc:
            raise _HTTPError(400, "invalid_request", str(exc)) from None

    def _check_model(self, path: str, request: ClientRequest) -> None:
        try:
            limit = self.backend.max_output(request.model)
        except UnknownModelError as exc:
            raise _HTTPError(404, "not_found", str(exc)) from None
        wanted = request.options.max_tokens
        if limit is not None and wanted is not None and wanted > limit:
            where = "options" if path in ("/v1/stream", AGENT_PATH) else "request"
            raise _HTTPError(
                400,
                "invalid_request",
                f"{where}.max_tokens: {wanted} is more than {request.model} generates "
                f"per request ({limit})",
            )

    async def _completion(self, receive: Receive, send: Send, path: str) -> None:
        if self._closing.is_set():
            raise _HTTPError(503, "unavailable", "server is shutting down", retry_after=1)
        capacity = self.config.max_concurrency + self.config.max_queue
        if self.admitted >= capacity:
            raise _HTTPError(
                429,
                "overloaded",
                f"server busy: {self.admitted} requests open (limit {capacity})",
                retry_after=1,
            )
        self.admitted += 1
        self._idle.clear()
        started = time.perf_counter()
        request: ClientRequest | None = None
        held = [0]  # this request's share of `buffered`, until its body is parsed
        try:
            try:
                body = await self._read_body(receive, held)
                request = await self._parse(path, body)
                del body
            finally:
                self.buffered -= held[0]
            self._check_model(path, request)
            await self._run(receive, send, path, request)
        finally:
            self.admitted -= 1
            if self.admitted == 0:
                self._idle.set()
            if request is not None:
                log.info(
                    "served %s model=%s stream=%s in %.3f s",
                    path,
                    request.model,
                    request.stream,
                    time.perf_counter() - started,
                )

    async def _run(self, receive: Receive, send: Send, path: str, request: ClientRequest) -> None:
        queue: asyncio.Queue[Event | None] = asyncio.Queue(maxsize=256)
        producer = asyncio.create_task(self._produce(request, queue))
        watcher = asyncio.create_task(_wait_disconnect(receive))
        try:
            if request.stream:
                await self._stream(send, queue, watcher, path, request)
            else:
                await self._whole(send, queue, watcher, path, request)
        finally:
            producer.cancel()
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await producer
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await watcher

    async def _slot(self) -> bool:
        """Wait for a stream slot; False when the server starts shutting down first."""
        if self._closing.is_set():
            return False
        if not self._slots.locked():
            await self._slots.acquire()
            return True
        acquire = asyncio.ensure_future(self._slots.acquire())
        closing = asyncio.ensure_future(self._closing.wait())
        try:
            await asyncio.wait({acquire, closing}, return_when=asyncio.FIRST_COMPLETED)
        except BaseException:  # cancelled while waiting: give back a slot won meanwhile
            closing.cancel()
            if acquire.done() and not acquire.cancelled():
                self._slots.release()
            else:
                acquire.cancel()
            raise
        closing.cancel()
        if not acquire.done():
            acquire.cancel()
            return False
        if self._closing.is_set():
            self._slots.release()
            return False
        return True

    async def _produce(self, request: ClientRequest, queue: asyncio.Queue[Event | None]) -> None:
        started = False  # a Start went out: a failure after it must not send another

        async def fail(error: Error) -> None:
            if not started:
                await queue.put(Start())
            await queue.put(error)

        try:
            if not await self._slot():
                await fail(_shutting_down())
                return
            self.active += 1
            try:
                async with self.backend.stream(
                    request.model, request.context, request.options
                ) as ev:
                    first_output = True
                    async for event in ev:
                        started = started or isinstance(event, Start)
                        await queue.put(_for_the_client(event, request.model))
                        if first_output and isinstance(event, _FIRST_TOKEN):
                            # A put into a free queue does not yield, and one upstream
                            # read can hold the whole answer: let the first token out
                            # now rather than after the rest of that read is decoded.
                            first_output = False
                            for _ in range(8):  # the consumer wakes a few loop turns later
                                if queue.empty():
                                    break
                                await asyncio.sleep(0)
            finally:
                self.active -= 1
                self._slots.release()
        except UnknownModelError as exc:
            await fail(Error.invalid_request(str(exc), status=404))
        except MissingCredentials as exc:
            log.error("no upstream key for model %s: %s", request.model, exc)
            await fail(Error.auth("the server has no upstream key for this model"))
        except StructuredOutputUnsupported as exc:  # the client's schema, this model
            await fail(Error.invalid_request(str(exc)))
        except asyncio.CancelledError:
            raise
        except Exception:  # a backend failure is the client's Error, not a 500 page
            # the details are the operator's (the log), not the untrusted client's
            log.exception("backend failed for model %s", request.model)
            await fail(Error.network("the server failed to produce this answer"))
        finally:
            with contextlib.suppress(asyncio.QueueFull):
                queue.put_nowait(None)

    def _early_error(self, path: str, error: Error) -> _HTTPError:
        """An error before any output, as the HTTP error the client's SDK knows."""
        if error.status in _OWN_STATUSES:
            status = error.status
        elif error.kind is not None:
            status = _STATUS_FOR_KIND.get(error.kind, 502)
        else:
            status = 502
        return _HTTPError(
            status,
            _dialect_for(path).error_type(error.kind),
            error.message,
            retry_after=error.retry_after,
        )

    async def _whole(
        self,
        send: Send,
        queue: asyncio.Queue[Event | None],
        watcher: asyncio.Task[None],
        path: str,
        request: ClientRequest,
    ) -> None:
        """A non-streaming response: the fold of the events, or an HTTP error."""
        events: list[Event] = []
        while True:
            got = await _next(queue, watcher, None, self._abort)
            if got is _DISCONNECTED:
                log.info("client disconnected; generation cancelled")
                return
            if got is _ABORTED:
                error = _shutting_down()
                raise _HTTPError(503, "unavailable", error.message, retry_after=error.retry_after)
            if got is None:
                got = Error.network("backend ended without a terminal event")
            assert not isinstance(got, _Marker)
            events.append(got)
            if (
                isinstance(got, Error)
                and path != AGENT_PATH  # the agent contract reports errors in-stream
                and all(isinstance(e, Start) for e in events[:-1])
            ):
                raise self._early_error(path, got)
            if isinstance(got, (Done, Error)):
                if self.config.append_sources and path in _SOURCELESS:
                    events = append_sources(events)
                await self._send_json(send, 200, _final_body(path, request, events))
                return

    async def _stream(
        self,
        send: Send,
        queue: asyncio.Queue[Event | None],
        watcher: asyncio.Task[None],
        path: str,
        request: ClientRequest,
    ) -> None:
        encode, keep_alive = _encoder_for(path, request)
        if self.config.append_sources and path in _SOURCELESS:
            encode = appending_sources(encode)
        loop = asyncio.get_running_loop()
        head_deadline = loop.time() + self.config.head_wait
        started = False  # response headers sent
        held: list[Event] = []  # Start events held until we know it is not an early error
        while True:
            if started:
                timeout = self.config.keepalive_interval
            else:
                timeout = max(0.0, head_deadline - loop.time())
            got = await _next(queue, watcher, timeout, self._abort)
            if got is _DISCONNECTED:
                log.info("client disconnected; generation cancelled")
                return
            if got is _TIMEOUT:
                if started:
                    chunk = keep_alive()
                else:  # the model is slow to start: tell the client and its proxies we are here
                    await send(
                        {
                            "type": "http.response.start",
                            "status": 200,
                            "headers": list(_SSE_HEADERS),
                        }
                    )
                    started = True
                    chunk = _OPENED
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
                continue
            if got is _ABORTED:
                if not started:
                    error = _shutting_down()
                    raise _HTTPError(
                        503, "unavailable", error.message, retry_after=error.retry_after
                    )
                batch: list[Event] = [_shutting_down()]
            elif got is None:
                batch = [Error.network("backend ended without a terminal event")]
            else:
                assert not isinstance(got, _Marker)
                batch = [got]
                # What the producer already has ready goes out in the same write:
                # no added latency, far fewer sends when the model outpaces the socket.
                while len(batch) < _MAX_BATCH and not isinstance(batch[-1], (Done, Error)):
                    if queue.empty():
                        break
                    ready = queue.get_nowait()
                    if ready is None:
                        ready = Error.network("backend ended without a terminal event")
                    batch.append(ready)
            if not started:
                output = next((e for e in batch if not isinstance(e, Start)), None)
                if output is None:
                    held += batch
                    continue
                if isinstance(output, Error) and path != AGENT_PATH:
                    raise self._early_error(path, output)
                await send(
                    {"type": "http.response.start", "status": 200, "headers": list(_SSE_HEADERS)}
                )
                started = True
            events = held + batch if held else batch
            held = []
            body = b"".join([encode(event) for event in events])
            final = isinstance(events[-1], (Done, Error))
            await send({"type": "http.response.body", "body": body, "more_body": not final})
            if final:
                return


def _adding_headers(send: Send, extra: list[tuple[bytes, bytes]]) -> Send:
    """``send`` with ``extra`` headers added to the response start (CORS)."""

    async def wrapped(message: Message) -> None:
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", []), *extra]}
        await send(message)

    return wrapped


#: what counts as the first token (the moment a client's clock stops)
_FIRST_TOKEN: Final = (TextDelta, ThinkingDelta, ToolCallDelta, Done, Error)


class _Marker:
    def __init__(self, name: str) -> None:
        self.name = name


_TIMEOUT: Final = _Marker("timeout")
_DISCONNECTED: Final = _Marker("disconnected")
_ABORTED: Final = _Marker("aborted")


async def _wait_disconnect(receive: Receive) -> None:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return


async def _next(
    queue: asyncio.Queue[Event | None],
    watcher: asyncio.Task[None],
    timeout: float | None,
    abort: asyncio.Event | None = None,
) -> Event | _Marker | None:
    """The next event, or why there is none: timeout, disconnect or shutdown."""
    if not queue.empty():
        return queue.get_nowait()
    getter = asyncio.ensure_future(queue.get())
    waiters: set[asyncio.Future[Any]] = {getter, watcher}
    aborter = asyncio.ensure_future(abort.wait()) if abort is not None else None
    if aborter is not None:
        waiters.add(aborter)
    try:
        done, _ = await asyncio.wait(waiters, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        if aborter is not None:
            aborter.cancel()
    if getter in done:
        return getter.result()
    getter.cancel()
    if watcher in done:
        return _DISCONNECTED
    if aborter is not None and aborter in done:
        return _ABORTED
    return _TIMEOUT


def _encoder_for(
    path: str, request: ClientRequest
) -> tuple[Callable[[Event], bytes], Callable[[], bytes]]:
    if path == "/v1/chat/completions":
        oa = OpenAIChatEncoder(
            response_id=f"chatcmpl-{uuid.uuid4().hex[:24]}",
            model=request.model,
            created=int(time.time()),
            include_usage=request.include_usage,
        )
        return oa.encode, oa.keep_alive
    if path == "/v1/messages":
        an = AnthropicEncoder(message_id=f"msg_{uuid.uuid4().hex[:24]}", model=request.model)
        return an.encode, an.keep_alive
    if path == AGENT_PATH:
        return agent_encoder(request)
    return encode_proxy_event, lambda: _KEEP_ALIVE


def _final_body(path: str, request: ClientRequest, events: list[Event]) -> dict[str, Any]:
    """A non-streaming response, built by folding the same events a stream carries."""
    message = accumulate(events)
    if path == "/v1/messages":
        return anthropic_message_body(
            message, message_id=f"msg_{uuid.uuid4().hex[:24]}", model=request.model
        )
    return openai_completion_body(
        message,
        response_id=f"chatcmpl-{uuid.uuid4().hex[:24]}",
        model=request.model,
        created=int(time.time()),
    )


class EventsBackend:
    """Serves recorded event lists by model name: for tests, demos and benchmarks.

    ``delay`` seconds pass before each event after `Start`, to exercise
    keep-alives, disconnects and concurrency limits with real timing;
    ``first_delay`` more before the first one (a model that thinks, a queue).
    Every model generates at most ``max_output`` tokens per request.
    """

    def __init__(
        self,
        streams: dict[str, list[Event]],
        *,
        delay: float = 0.0,
        first_delay: float = 0.0,
        max_output: int | None = None,
    ) -> None:
        self.streams = streams
        self.delay = delay
        self.first_delay = first_delay
        self.limit = max_output
        self.cancelled = 0
        #: (model, options) of every stream opened, for tests
        self.opened: list[tuple[str, Options]] = []

    def list_models(self) -> list[str]:
        return sorted(self.streams)

    def max_output(self, model: str) -> int | None:
        if model not in self.streams:
            raise UnknownModelError(
                f"unknown model {model!r}; this server has: {', '.join(self.list_models())}"
            )
        return self.limit

    @contextlib.asynccontextmanager
    async def stream(
        self, model: str, context: Context, options: Options
    ) -> AsyncIterator[AsyncIterator[Event]]:
        if model not in self.streams:
            raise UnknownModelError(
                f"unknown model {model!r}; this server has: {', '.join(self.list_models())}"
            )
        self.opened.append((model, options))
        yield self._events(self.streams[model])

    async def _events(self, events: list[Event]) -> AsyncIterator[Event]:
        try:
            first = True
            for event in events:
                if not isinstance(event, Start):
                    wait = self.delay + (self.first_delay if first else 0.0)
                    first = False
                    if wait:
                        await asyncio.sleep(wait)
                yield event
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
