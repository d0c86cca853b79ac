"""`streamfn serve`: any model streamfn reaches, served in the dialect the client speaks.

A plain ASGI application (no web framework) written once for both shells:
hypercorn runs it on asyncio (`streamfn.io_asyncio.serve`) or trio
(`streamfn.io_trio.serve`), and the loop's primitives come in as a
`Runtime`. Every decision is the sans-I/O codec's (`streamfn.core.serve`:
routes, guard, auth, parsing, encoders, statuses); this module only moves
bytes and runs tasks. Its routes are the records of `streamfn.core.serve._served`.

The trust boundary: the server holds the provider keys, its clients are not
trusted. A client chooses what to generate, never where a request goes or
how often it is sent (`streamfn.core.serve._inbound` rejects such fields by
name); `streamfn.core.serve._guard` keeps web pages out (Host, Origin,
Content-Type). Every bad request is a 4xx in the client's own error shape.

Every request runs the backend in a producer task; the response loop sends what it
produces, a keep-alive while the model is silent, and stops the producer at once when
the client disconnects (streaming or not), so an abandoned request never keeps a local
generation or an upstream connection alive. A non-streaming response sends nothing
until the answer is whole, so any error, even after output began (a reset, a malformed
chunk, the content cap), is an HTTP error in the client's own error shape (502, 504 for
a timeout), never a body calling a cut answer complete. In a stream, errors before any
output (within ``head_wait``) are such HTTP errors too; after that the headers and an
SSE comment are out, and errors go in-stream as each client expects. Shutdown lets
streams finish for a grace period, then ends each with a terminal error in its dialect.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from typing import Any, ClassVar

from streamfn.core import Done, Error, Event, Start
from streamfn.core.serve import HTTPError, parse_request
from streamfn.core.serve._guard import cors_headers, header, preflight_headers
from streamfn.core.serve._inbound import ClientRequest
from streamfn.core.serve._log_text import loggable
from streamfn.core.serve._responses import OPENED, Stamps
from streamfn.core.serve._routes import (
    PARSE_INLINE_BYTES,
    BodyBudget,
    Route,
    admit,
    check_model,
    models_body,
    route,
)
from streamfn.core.serve._served import (
    Served,
    dialect_for,
    encoder_for,
)
from streamfn.core.serve._status import (
    early_error,
    error_response,
    for_the_client,
    is_shutting_down,
    shutting_down,
)
from streamfn.ledger import ClientKey, Store

from ._admin import Admin, is_admin_path
from ._answer_ids import answer_headers, current_request_id, note_start
from ._contract import Backend, ServerConfig, UnknownModelError, open_batches
from ._counting import answer_count
from ._failures import backend_failure
from ._health import send_health
from ._intake import body_chunks, receive_body
from ._keys import ClientKeys, allowed_models
from ._messages import Receive, Send, send_json, serve_lifespan, start_sse, watch_disconnect
from ._metrics import send_metrics
from ._observe import Flight, Flights, Observer, current_flight
from ._resolve import Resolver, check_input_urls, system_resolver
from ._runtime import (
    ABORTED,
    DISCONNECTED,
    TIMEOUT,
    Flag,
    Mailbox,
    Runtime,
    Slots,
    first_token_at,
    next_batch,
)
from ._socket import serve_socket
from ._stamps import SystemStamps
from ._stream_limit import within_limit
from ._whole import send_whole

__all__ = ["App"]

log = logging.getLogger("streamfn")

Scope = MutableMapping[str, Any]
#: how a request's body is read, charged to its share of the budget (``held``)
_Read = Callable[[list[int]], Awaitable[bytes]]
_Handle = Callable[[ClientRequest, list[int]], Awaitable[None]]  # a completion, a count


class App:
    """The ASGI application. One instance serves many concurrent requests.

    ``runtime`` is the event loop's (asyncio's or trio's `Runtime`); each shell's ``serve`` binds its own
    when none was given. A shell's subclass names its own as ``default_runtime``.
    ``resolver`` looks up the host names of client input URLs (the system's DNS
    unless given; tests hand in a table). ``observers`` are told of every request
    as it opens and closes (usage records, metrics, the dashboard); the requests
    running now are `flights`. ``store`` holds client keys and the usage record.
    """

    default_runtime: ClassVar[type[Runtime] | None] = None

    def __init__(
        self,
        backend: Backend,
        config: ServerConfig | None = None,
        *,
        runtime: Runtime | None = None,
        stamps: Stamps | None = None,
        resolver: Resolver | None = None,
        observers: Sequence[Observer] = (),
        store: Store | None = None,
    ) -> None:
        self.backend = backend
        self.config = config or ServerConfig()
        #: client keys, budgets and the usage record (None: one shared key, no records)
        self.store = store
        self.keys = None if store is None else ClientKeys(self, store)  # and usage records
        #: the requests admitted and parsed until they end, and their observers
        self.flights = Flights([*observers, *(self.keys.observers if self.keys else ())])
        self.resolver: Resolver = resolver or system_resolver
        self.stamps: Stamps = stamps or SystemStamps()
        #: backend streams running now
        self.active = 0
        #: requests admitted: reading their body, waiting for a slot, or running
        self.admitted = 0
        #: requests held in memory, bodies and parsed forms (see ServerConfig.max_buffered_bytes)
        self.budget = BodyBudget(self.config.max_body_bytes, self.config.max_buffered_bytes)
        self._closing = False
        self._aborted = False
        self._mailboxes: set[Mailbox] = set()
        self._idle_waiters: list[Flag] = []
        #: one flag per request still receiving its body, set when shutdown begins
        self._uploads: set[Flag] = set()
        self._shutdown_done: Flag | None = None
        self._runtime: Runtime | None = None
        self._slots: Slots | None = None
        self.admin = Admin(self) if self.config.admin_key else None  # the dashboard, /admin
        if runtime is None and self.default_runtime is not None:
            runtime = self.default_runtime()
        if runtime is not None:
            self.bind(runtime)

    def bind(self, runtime: Runtime) -> None:
        """Serve on ``runtime``'s loop (a shell's ``serve`` calls this); once only."""
        if self._runtime is not None:
            if self._runtime.name != runtime.name:
                raise RuntimeError(
                    f"this App runs on {self._runtime.name}; make another to serve on "
                    f"{runtime.name}"
                )
            return
        self._runtime = runtime
        self._slots = Slots(runtime, self.config.max_concurrency)
        bind_clock = getattr(self.backend, "bind_clock", None)
        if bind_clock is not None:  # deployment cooldowns, timed on this loop's clock
            bind_clock(runtime.clock)

    @property
    def runtime(self) -> Runtime:
        if self._runtime is None:
            raise RuntimeError(
                "this App has no event loop runtime: serve it with streamfn.io_asyncio.serve "
                "or streamfn.io_trio.serve, or pass runtime="
            )
        return self._runtime

    @property
    def open_server(self) -> bool:
        """Whether clients need no key at all (loopback use): the operator's routes too."""
        return not (self.config.api_key or self.keys)

    @property
    def buffered(self) -> int:
        """Bytes of requests held right now (bodies, and their parsed forms until they end)."""
        return self.budget.buffered

    # -- ASGI entry -------------------------------------------------------------
    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            if self.admin is not None:  # under --workers: its board
                self.admin.start()
            await serve_lifespan(receive, send, self.shutdown)
            return
        if scope["type"] == "websocket":  # its handshake answer names a request id too
            await serve_socket(self, scope, receive, answer_headers(send, [], self.stamps))
            return
        if scope["type"] != "http":
            return
        path = scope.get("path", "")
        if self.admin is not None and is_admin_path(path):  # the operator's: no CORS
            return await self.admin.serve(scope, receive, answer_headers(send, [], self.stamps))
        headers = scope.get("headers", [])
        cors = cors_headers(header(headers, b"origin"), self.config.cors_origins)
        send = answer_headers(send, cors, self.stamps)  # CORS, request id, rate limits
        try:
            await self._route(scope, receive, send, path, bool(cors))
        except HTTPError as exc:
            status, error_headers, body = error_response(dialect_for(path), exc)
            await send({"type": "http.response.start", "status": status, "headers": error_headers})
            await send({"type": "http.response.body", "body": body})

    async def _route(
        self, scope: Scope, receive: Receive, send: Send, path: str, cors: bool
    ) -> None:
        headers = scope.get("headers", [])
        config = self.config
        chosen, served = route(
            scope.get("method", "GET"),
            path,
            headers,
            allowed_hosts=config.allowed_hosts,
            cors=cors,
            api_key=config.api_key,
            client_keys=self.keys is not None,
        )
        key = None if self.keys is None else await self.keys.identify(headers, chosen)
        if chosen is Route.PREFLIGHT:
            preflight = preflight_headers(headers, config.cors_origins)
            await send({"type": "http.response.start", "status": 204, "headers": preflight})
            await send({"type": "http.response.body", "body": b""})
        elif chosen is Route.HEALTH:
            await send_health(self, headers, send)
        elif chosen is Route.MODELS:
            await send_json(send, 200, models_body(allowed_models(key, self.backend), headers))
        elif chosen is Route.ADMIN:
            await send_metrics(send, headers, config, self.flights.observers, self.open_server)
        elif chosen is Route.COUNT:
            await self._admitted(served, self._body(receive), self._count_for(send, served), key)
        else:
            await self.complete(served, receive, send, key)

    async def complete(
        self, served: Served, receive: Receive, send: Send, key: ClientKey | None = None
    ) -> None:
        """Read, check, run and answer one completion request of ``served``'s route, on
        ``key`` with client keys (None: the operator's own, from an admin route)."""
        run = functools.partial(self._run, receive, send, served)
        await self._admitted(served, self._body(receive), run, key)

    # -- shutdown ---------------------------------------------------------------------
    def begin_shutdown(self) -> None:
        """Start `shutdown` without waiting for it (from a signal or a server's trigger)."""
        if self._shutdown_done is None:
            self._shutdown_done = self.runtime.flag()
            self.runtime.spawn_system(self._shut_down)

    async def shutdown(self) -> None:
        """Refuse new and queued requests (503), let running ones finish for the grace
        period, then end each with a terminal error in its dialect. Idempotent; the
        shutdown goes on if the caller is cancelled."""
        self.begin_shutdown()
        assert self._shutdown_done is not None
        await self._shutdown_done.wait()

    async def _shut_down(self) -> None:
        try:
            self._closing = True
            for upload in list(self._uploads):  # a body still arriving: a 503 now
                upload.set()
            if self._slots is not None:
                self._slots.close()
            await self._until_idle(self.config.shutdown_grace)
            self._aborted = True
            for mailbox in list(self._mailboxes):
                mailbox.signal(ABORTED)
            await self._until_idle(2.0)
            if self.keys is not None:  # the usage records still queued, kept
                await self.runtime.to_thread(self.keys.close)
            # Idle upstream connections belong to this event loop: close them with it.
            aclose = getattr(self.backend, "aclose", None)
            if aclose is not None:
                await aclose()
        except Exception:
            log.exception("server shutdown failed")
        finally:
            assert self._shutdown_done is not None
            self._shutdown_done.set()

    async def _until_idle(self, timeout: float) -> None:
        if self.admitted:
            flag = self.runtime.flag()
            self._idle_waiters.append(flag)
            await self.runtime.wait(flag, timeout)

    # -- completions and counts -------------------------------------------------------
    async def _admitted(
        self, served: Served, read: _Read, handle: _Handle, key: ClientKey | None = None
    ) -> None:
        """A request with a body (an HTTP body, a WebSocket message): admitted, ``read``
        and parsed within the budgets, its model and input URLs checked, then
        ``handle``d (a completion or a count); with client keys, admitted on ``key`` first."""
        path = served.path
        capacity = self.config.max_concurrency + self.config.max_queue
        admit(closing=self._closing, admitted=self.admitted, capacity=capacity)
        self.admitted += 1
        started = time.perf_counter()
        request: ClientRequest | None = None
        flight: Flight | None = None
        held = [0]  # this request's share of the budget, until it ends
        try:
            body = await read(held)
            parsing, kept = self.budget.hold_parse(held[0], body)
            held[0] += parsing
            request = await self._parse(path, body)
            del body
            held[0] -= self.budget.release(parsing - kept)  # the parse's copies are gone
            check_model(served, request, self._max_output(request.model))
            flight = self.flights.open(
                id=current_request_id() or f"req_{self.stamps.hex_id()}",
                route=path,
                model=request.model,
                stream=request.stream,
                arrived=self.stamps.unix_time(),
                started=self.runtime.clock(),
            )
            if self.keys is not None:  # the key's limits and budget: before any upstream request
                request = await self.keys.admit(flight, key, request, served.kind)
            await check_input_urls(self.runtime, self.resolver, request)  # DNS: after the rest
            await handle(request, held)
            if flight.outcome is None and served.kind is Route.COUNT:
                flight.outcome = "ok"
        except HTTPError as exc:
            if flight is not None and flight.outcome is None:
                flight.outcome = f"error:http_{exc.status}"
            raise
        finally:
            if flight is not None:
                self.flights.close(flight, self.runtime.clock())
            self.budget.release(held[0])
            self.admitted -= 1
            if self.admitted == 0:
                waiters, self._idle_waiters = self._idle_waiters, []
                for flag in waiters:
                    flag.set()
            if request is not None:
                took, model = time.perf_counter() - started, loggable(request.model)
                log.info("served %s model=%s stream=%s in %.3f s", path, model, request.stream, took)

    def _body(self, receive: Receive) -> _Read:
        """How an HTTP request's body is read: within the body timeout, until shutdown."""
        timeout = self.config.body_timeout
        read = functools.partial(body_chunks, self.budget)
        return lambda held: receive_body(self.runtime, self._uploads, timeout, receive, held, read)

    async def _parse(self, path: str, body: bytes) -> ClientRequest:
        allowed = frozenset(self.config.allow_server_tools)
        urls = self.config.allow_input_urls
        default = self.config.default_model
        if len(body) > PARSE_INLINE_BYTES:  # megabytes of prompt: not on the loop
            return await self.runtime.to_thread(parse_request, path, body, allowed, urls, default)
        return parse_request(path, body, allowed, urls, default)

    def _max_output(self, model: str) -> int | None:
        try:
            return self.backend.max_output(model)
        except UnknownModelError as exc:
            raise HTTPError(404, "not_found", str(exc)) from None

    def _count_for(self, send: Send, served: Served) -> _Handle:
        assert self._slots is not None
        slots = self._slots
        return lambda request, held: answer_count(self.backend, slots, served, request, send)

    async def _run(
        self, receive: Receive, send: Send, served: Served, request: ClientRequest, held: list[int]
    ) -> None:
        mailbox = Mailbox(self.runtime, max_bytes=self.config.max_unsent_bytes)
        if self._aborted:
            mailbox.signal(ABORTED)
        self._mailboxes.add(mailbox)
        try:
            async with self.runtime.task_group() as tasks:
                tasks.start_soon(self._produce, request, mailbox)
                tasks.start_soon(watch_disconnect, receive, mailbox)
                if request.stream or served.whole is None:
                    await self._stream(send, mailbox, served, request)
                else:
                    await send_whole(self, send, mailbox, served, request, held)
        finally:
            self._mailboxes.discard(mailbox)

    async def _produce(self, request: ClientRequest, mailbox: Mailbox) -> None:
        started = False  # a Start went out: a failure after it must not send another

        flight = current_flight()
        clock = self.runtime.clock

        async def fail(error: Error) -> None:
            batch: list[Event] = [error] if started else [Start(), error]
            if flight is not None:
                flight.note(batch, clock())
            await mailbox.put(batch)

        slots = self._slots
        assert slots is not None
        try:
            if not await slots.acquire():
                await fail(shutting_down())
                return
            if flight is not None:
                flight.dispatched = True  # from here the upstream may be billing
            self.active += 1

            async def relay() -> None:
                nonlocal started
                first_output, model = True, request.model
                opened = open_batches(self.backend, model, request.context, request.options)
                async with opened as batches:
                    async for batch in batches:
                        if not batch:  # a backend's empty read: nothing to hand on
                            continue
                        # only a batch's first event can be a Start, only its last an Error
                        started = note_start(batch[0]) or started  # for the answer's headers
                        last = batch[-1]
                        if isinstance(last, Error):
                            batch = [*batch[:-1], for_the_client(last, model)]
                        if flight is not None:
                            flight.note(batch, clock())
                        if first_output:
                            first = first_token_at(batch)
                            if first is not None:
                                first_output = False  # let it out before the rest
                                await mailbox.put_and_hand_over(batch[: first + 1])
                                batch = batch[first + 1 :]
                                if not batch:
                                    continue
                        if not mailbox.offer(batch):
                            await mailbox.put(batch)
            try:
                await within_limit(self, flight, relay, fail)  # one timer for the whole stream
            finally:
                self.active -= 1
                slots.release()
        except Exception as exc:  # a backend failure is the client's Error, not a 500 page
            await fail(backend_failure(exc, request.model))
        finally:
            mailbox.put_nowait(None)

    async def _stream(
        self, send: Send, mailbox: Mailbox, served: Served, request: ClientRequest
    ) -> None:
        config = self.config
        encode, keep_alive = encoder_for(
            served, request, self.stamps, append=config.append_sources
        )
        extra = list(served.headers)
        clock = self.runtime.clock
        head_deadline = clock() + config.head_wait
        started = False  # response headers sent
        held: list[Event] = []  # Start events held until we know it is not an early error
        while True:
            wait = config.keepalive_interval if started else max(0.0, head_deadline - clock())
            got = await mailbox.get(wait)
            if got is DISCONNECTED:
                log.info("client disconnected; generation cancelled")
                return
            if got is TIMEOUT:
                # the model is slow to start: tell the client and its proxies we are here
                chunk = keep_alive() if started else OPENED
                if not started:
                    await start_sse(send, extra)
                    started = True
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
                continue
            batch = next_batch(got, mailbox, started)
            if not started:
                output = next((e for e in batch if not isinstance(e, Start)), None)
                if output is None:
                    held += batch
                    continue
                if isinstance(output, Error) and (
                    not served.early_errors_in_stream or is_shutting_down(output)  # a 503 anywhere
                ):
                    raise early_error(served.dialect, output)
                await start_sse(send, extra)
                started = True
            events = held + batch if held else batch
            held = []
            final = isinstance(events[-1], (Done, Error))
            body = encode(events)
            await send({"type": "http.response.body", "body": body, "more_body": not final})
            if final:
                return
