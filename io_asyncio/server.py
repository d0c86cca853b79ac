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

Every stream runs the backend in a producer task; the response loop sends
what it produces, a keep-alive while the model is silent, and stops the
producer at once when the client disconnects, so an abandoned request never
keeps a local generation or an upstream connection alive. Errors that come
before any output become HTTP errors in the client's own error shape (so SDK
clients raise their usual exceptions); errors after output started are sent
in-stream the way each client expects.
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
from streamfn.core.encode_anthropic import (
    AnthropicEncoder,
    anthropic_error_body,
    anthropic_error_type,
    anthropic_message_body,
)
from streamfn.core.encode_openai import (
    OpenAIChatEncoder,
    openai_completion_body,
    openai_error_type,
)
from streamfn.core.events import (
    Done,
    Error,
    ErrorKind,
    Event,
    Start,
)
from streamfn.core.grounding import append_sources, appending_sources
from streamfn.core.inbound import (
    BadRequest,
    ClientRequest,
    parse_anthropic_request,
    parse_openai_request,
)
from streamfn.core.messages import Context
from streamfn.core.options import Options
from streamfn.core.providers.proxy import encode_proxy_event
from streamfn.core.sse import encode_sse

from .agent_route import AGENT_PATH, agent_encoder

#: client dialects with no field for web-search sources (see `streamfn.core.grounding`)
_SOURCELESS: Final = ("/v1/chat/completions", AGENT_PATH)

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


class UnknownModelError(LookupError):
    """The backend serves no model by that name; becomes a 404 naming the choices."""


class Backend(Protocol):
    """Where events come from: the local model, upstream providers, or a recording."""

    def list_models(self) -> list[str]: ...

    def stream(
        self, model: str, context: Context, options: Options
    ) -> AbstractAsyncContextManager[AsyncIterator[Event]]: ...


class ServerConfig(msgspec.Struct, kw_only=True):
    """Limits and policies; ``api_key`` None means no authentication (loopback use)."""

    api_key: str | None = None
    max_body_bytes: int = 8 << 20
    max_concurrency: int = 16
    keepalive_interval: float = 15.0
    shutdown_grace: float = 10.0
    #: append web-search sources as a last text block for dialects with no field for them
    append_sources: bool = False

    def __repr__(self) -> str:
        key = "***" if self.api_key else None
        return (
            f"ServerConfig(api_key={key}, max_body_bytes={self.max_body_bytes}, "
            f"max_concurrency={self.max_concurrency})"
        )


class _HTTPError(Exception):
    def __init__(self, status: int, kind: str, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.status = status
        self.kind = kind
        self.message = message
        self.retry_after = retry_after


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
    }

    def error_body(self, kind: str, message: str) -> bytes:
        return _json.encode(anthropic_error_body(kind, message))

    def error_type(self, kind: ErrorKind | None) -> str:
        return anthropic_error_type(kind)


_OPENAI: Final = _Dialect()
_ANTHROPIC: Final = _AnthropicDialect()


class App:
    """The ASGI application. One instance serves many concurrent requests."""

    def __init__(self, backend: Backend, config: ServerConfig | None = None) -> None:
        self.backend = backend
        self.config = config or ServerConfig()
        self.active = 0
        self._closing = False
        self._idle = asyncio.Event()
        self._idle.set()
        self._abort = asyncio.Event()

    # -- ASGI entry -------------------------------------------------------------
    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        path = scope.get("path", "")
        method = scope.get("method", "GET")
        dialect = _ANTHROPIC if path == "/v1/messages" else _OPENAI
        try:
            if method == "GET" and path in ("/health", "/healthz"):
                await self._send_json(send, 200, {"status": "ok", "active_streams": self.active})
            elif method == "GET" and path == "/v1/models":
                self._authenticate(scope)
                await self._send_json(send, 200, self._models_body(scope))
            elif method == "POST" and path in (
                "/v1/chat/completions",
                "/v1/messages",
                "/v1/stream",
                AGENT_PATH,
            ):
                self._authenticate(scope)
                body = await self._read_body(receive)
                await self._completion(scope, receive, send, path, body)
            else:
                raise _HTTPError(404, "not_found", f"no route for {method} {path}")
        except _HTTPError as exc:
            kind = dialect.word(exc.kind)
            headers = list(_JSON)
            if exc.retry_after is not None:
                headers.append((b"retry-after", str(int(exc.retry_after + 0.999)).encode()))
            if exc.status == 401:
                headers.append((b"www-authenticate", b"Bearer"))
            await send({"type": "http.response.start", "status": exc.status, "headers": headers})
            await send(
                {"type": "http.response.body", "body": dialect.error_body(kind, exc.message)}
            )

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.shutdown()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def shutdown(self) -> None:
        """Refuse new streams, let open ones finish for the grace period, then end them."""
        self._closing = True
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

    async def _read_body(self, receive: Receive) -> bytes:
        cap = self.config.max_body_bytes
        chunks: list[bytes] = []
        size = 0
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
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)

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
    def _parse(self, path: str, body: bytes) -> ClientRequest:
        try:
            if path == "/v1/chat/completions":
                return parse_openai_request(body)
            if path == "/v1/messages":
                return parse_anthropic_request(body)
            return _parse_native(body)
        except BadRequest as exc:
            raise _HTTPError(400, "invalid_request", str(exc)) from None

    async def _completion(
        self, scope: Scope, receive: Receive, send: Send, path: str, body: bytes
    ) -> None:
        request = self._parse(path, body)
        if self._closing:
            raise _HTTPError(503, "unavailable", "server is shutting down", retry_after=1)
        if self.active >= self.config.max_concurrency:
            raise _HTTPError(
                429,
                "overloaded",
                f"server busy: {self.active} streams open (limit {self.config.max_concurrency})",
                retry_after=1,
            )
        self.active += 1
        self._idle.clear()
        started = time.perf_counter()
        try:
            await self._run(receive, send, path, request)
        finally:
            self.active -= 1
            if self.active == 0:
                self._idle.set()
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
            head = await self._head(queue, watcher)
            if head is None:  # client went away before anything was produced
                return
            terminal = head[-1] if isinstance(head[-1], (Done, Error)) else None
            dialect = _ANTHROPIC if path == "/v1/messages" else _OPENAI
            # All before it are Start: nothing sent yet (the agent contract sends it in-stream).
            if isinstance(terminal, Error) and path != AGENT_PATH:
                if terminal.status == 404:
                    status = 404
                elif terminal.kind is not None:
                    status = _STATUS_FOR_KIND.get(terminal.kind, 502)
                else:
                    status = 502
                raise _HTTPError(
                    status,
                    dialect.error_type(terminal.kind),
                    terminal.message,
                    retry_after=terminal.retry_after,
                )
            if not request.stream:
                events = head if terminal is not None else head + await _collect(queue)
                if self.config.append_sources and path in _SOURCELESS:
                    events = append_sources(events)
                await self._send_json(send, 200, _final_body(path, request, events))
                return
            await self._stream(send, queue, watcher, path, request, head)
        finally:
            producer.cancel()
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await producer
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await watcher

    async def _produce(self, request: ClientRequest, queue: asyncio.Queue[Event | None]) -> None:
        try:
            async with self.backend.stream(request.model, request.context, request.options) as ev:
                async for event in ev:
                    await queue.put(event)
        except UnknownModelError as exc:
            await queue.put(Start())
            await queue.put(Error.invalid_request(str(exc), status=404))
        except MissingCredentials as exc:
            await queue.put(Start())
            await queue.put(Error.auth(f"the server has no upstream key: {exc}"))
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a backend failure is the client's Error, not a 500 page
            log.exception("backend failed for model %s", request.model)
            await queue.put(Start())
            await queue.put(Error.network(f"backend failed: {type(exc).__name__}: {exc}"))
        finally:
            with contextlib.suppress(asyncio.QueueFull):
                queue.put_nowait(None)

    async def _head(
        self, queue: asyncio.Queue[Event | None], watcher: asyncio.Task[None]
    ) -> list[Event] | None:
        """Events up to the first output or the terminal, so early errors become HTTP errors."""
        head: list[Event] = []
        while True:
            event = await _next(queue, watcher, None)
            if event is _DISCONNECTED:
                return None
            if event is None:
                head.append(Error.network("backend ended without a terminal event"))
                return head
            assert not isinstance(event, _Marker)
            head.append(event)
            if not isinstance(event, Start):
                return head

    async def _stream(
        self,
        send: Send,
        queue: asyncio.Queue[Event | None],
        watcher: asyncio.Task[None],
        path: str,
        request: ClientRequest,
        head: list[Event],
    ) -> None:
        encode, keep_alive = _encoder_for(path, request)
        if self.config.append_sources and path in _SOURCELESS:
            encode = appending_sources(encode)
        await send({"type": "http.response.start", "status": 200, "headers": list(_SSE_HEADERS)})
        pending: list[Event] = list(head)
        while True:
            frames: list[bytes] = []
            for event in pending:
                frames.append(encode(event))
                if isinstance(event, (Done, Error)):
                    body = b"".join(frames)
                    await send({"type": "http.response.body", "body": body, "more_body": False})
                    return
            if pending:
                body = b"".join(frames)
                await send({"type": "http.response.body", "body": body, "more_body": True})
            pending = []
            got = await _next(queue, watcher, self.config.keepalive_interval, self._abort)
            if got is _DISCONNECTED:
                log.info("client disconnected; generation cancelled")
                return
            if got is _TIMEOUT:
                await send({"type": "http.response.body", "body": keep_alive(), "more_body": True})
            elif got is _ABORTED:
                pending = [Error.network("server shutting down")]
            elif got is None:
                pending = [Error.network("backend ended without a terminal event")]
            else:
                assert not isinstance(got, _Marker)
                pending = [got]
                # What the producer already has ready goes out in the same write:
                # no added latency, far fewer sends when the model outpaces the socket.
                while len(pending) < _MAX_BATCH and not queue.empty():
                    ready = queue.get_nowait()
                    if ready is None:
                        pending.append(Error.network("backend ended without a terminal event"))
                        break
                    pending.append(ready)
                    if isinstance(ready, (Done, Error)):
                        break


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


async def _collect(queue: asyncio.Queue[Event | None]) -> list[Event]:
    events: list[Event] = []
    while True:
        event = await queue.get()
        if event is None:
            if not events or not isinstance(events[-1], (Done, Error)):
                events.append(Error.network("backend ended without a terminal event"))
            return events
        events.append(event)
        if isinstance(event, (Done, Error)):
            return events


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


class _NativeRequest(msgspec.Struct, kw_only=True):
    model: str
    context: Context
    options: Options = msgspec.field(default_factory=Options)


def _parse_native(body: bytes) -> ClientRequest:
    try:
        req = msgspec.json.decode(body, type=_NativeRequest)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise BadRequest(f"native request: {exc}") from None
    options = msgspec.structs.replace(req.options, api_key=None)
    return ClientRequest(model=req.model, context=req.context, options=options, stream=True)


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
    keep-alives, disconnects and concurrency limits with real timing.
    """

    def __init__(self, streams: dict[str, list[Event]], *, delay: float = 0.0) -> None:
        self.streams = streams
        self.delay = delay
        self.cancelled = 0

    def list_models(self) -> list[str]:
        return sorted(self.streams)

    @contextlib.asynccontextmanager
    async def stream(
        self, model: str, context: Context, options: Options
    ) -> AsyncIterator[AsyncIterator[Event]]:
        if model not in self.streams:
            raise UnknownModelError(
                f"unknown model {model!r}; this server has: {', '.join(self.list_models())}"
            )
        yield self._events(self.streams[model])

    async def _events(self, events: list[Event]) -> AsyncIterator[Event]:
        try:
            for event in events:
                if self.delay and not isinstance(event, Start):
                    await asyncio.sleep(self.delay)
                yield event
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
