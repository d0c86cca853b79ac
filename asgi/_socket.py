"""A route's WebSocket: many turns over one connection (OpenAI's Responses over a socket).

The openai SDK's ``responses.connect()`` opens ``ws://…/v1/responses`` and sends
``response.create`` messages; each is answered with the same events the HTTP route
streams, one JSON text message each. A turn is a request like any other: admitted
against the same limits, its message charged to the same memory budget and parsed by
the same parser, its model and input URLs checked, its events produced in a
concurrency slot. The key is checked once, at the handshake, as for HTTP; with client
keys each turn is admitted on it like a request (its limits, its budget).

One turn runs at a time; messages that arrive meanwhile wait their turn, a bounded
few (past that the socket is closed: a client cannot queue work without limit), each
charged to the memory budget from its arrival (a waiting message is a request body
held in memory; one past the budget is its turn's 503), its decoding charged at its
peak like a body's parse, and off the loop when large. A
closed socket cancels the running turn's upstream call at once. What the server does
not take (``response.steer``, an unknown type, a malformed message) is an ``error``
event naming it, and the socket stays open.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import MutableMapping
from typing import TYPE_CHECKING, Any, Final

import msgspec

from streamfn.core import Done, Error, Event
from streamfn.core.serve import HTTPError
from streamfn.core.serve._routes import PARSE_INLINE_BYTES, parsing_cost, route_socket, socket_body
from streamfn.core.serve._served import Served
from streamfn.core.serve._status import OPENAI, error_response, shutting_down
from streamfn.ledger import ClientKey

from ._messages import Receive, Send
from ._runtime import ABORTED, DISCONNECTED, Flag, Mailbox, Marker, ended_early

if TYPE_CHECKING:
    from ._app import App

__all__ = ["IDLE_TIMEOUT", "MAX_WAITING", "serve_socket"]

log = logging.getLogger("streamfn")

#: messages that may wait while a turn runs; one more closes the socket (policy)
MAX_WAITING: Final = 8
#: seconds a socket may wait with no turn running and no message before it is closed
#: (going away, which the openai SDK reconnects after): an idle HTTP connection is
#: closed after the head timeout, and an idle socket held its connection place forever
IDLE_TIMEOUT: Final = 120.0
#: WebSocket close codes (RFC 6455): a policy violation, the server going away
POLICY: Final = 1008
GOING_AWAY: Final = 1001


async def serve_socket(
    app: App, scope: MutableMapping[str, Any], receive: Receive, send: Send
) -> None:
    """The WebSocket at ``scope``: refused as its HTTP route would refuse it, else
    accepted and served turn by turn until the client closes it."""
    message = await receive()
    if message["type"] != "websocket.connect":
        return
    headers = scope.get("headers", [])
    try:
        served = route_socket(
            scope.get("path", ""),
            headers,
            allowed_hosts=app.config.allowed_hosts,
            api_key=app.config.api_key,
            client_keys=app.keys is not None,
        )
        key = None if app.keys is None else await app.keys.identify(headers, served.kind)
    except HTTPError as exc:
        await _refuse(scope, send, exc)
        return
    await send({"type": "websocket.accept"})
    await _Session(app, served, receive, send, key).run()


async def _refuse(scope: MutableMapping[str, Any], send: Send, exc: HTTPError) -> None:
    """The HTTP error the route would answer, where the server can send one before
    accepting (the ASGI denial response), else a close (which the server answers 403)."""
    if "websocket.http.response" in scope.get("extensions", {}):
        status, headers, body = error_response(OPENAI, exc)
        await send({"type": "websocket.http.response.start", "status": status, "headers": headers})
        await send({"type": "websocket.http.response.body", "body": body})
        return
    await send({"type": "websocket.close", "code": POLICY})


class _Session:
    """One accepted socket: a reader task puts messages in ``waiting``; turns take them."""

    def __init__(
        self, app: App, served: Served, receive: Receive, send: Send, key: ClientKey | None
    ) -> None:
        self.app = app
        self.served = served
        #: the client key presented at the handshake (each turn is admitted on it)
        self.key = key
        self.receive = receive
        self.send = send
        #: messages waiting for their turn, each charged to the budget (or its refusal)
        self.waiting: deque[bytes | HTTPError] = deque()
        self.closed = False
        #: set when a message arrives or the socket closes (a new flag per wait)
        self.arrived: Flag = app.runtime.flag()
        #: the running turn's mailbox, told when the client goes
        self.mailbox: Mailbox | None = None

    async def run(self) -> None:
        try:
            async with self.app.runtime.task_group() as tasks:
                tasks.start_soon(self._read)
                while True:
                    while not self.waiting and not self.closed:
                        self.arrived = self.app.runtime.flag()
                        if not await self.app.runtime.wait(self.arrived, IDLE_TIMEOUT):
                            log.info("websocket idle for %g s; closed", IDLE_TIMEOUT)
                            await self.send({"type": "websocket.close", "code": GOING_AWAY})
                            return
                    if self.closed:
                        return
                    await self._turn(self.waiting.popleft())
        finally:  # the messages left waiting give their charge back
            for left in self.waiting:
                if isinstance(left, bytes):
                    self.app.budget.release(len(left))
            self.waiting.clear()

    async def _read(self) -> None:
        """Every message the client sends, until it closes the socket."""
        try:
            while True:
                message = await self.receive()
                if message["type"] == "websocket.disconnect":
                    return
                data = message.get("bytes") or (message.get("text") or "").encode()
                if len(self.waiting) >= MAX_WAITING:
                    log.warning("websocket client queued more than %d messages; closed", MAX_WAITING)
                    await self.send({"type": "websocket.close", "code": POLICY})
                    return
                try:  # held from now on, like an HTTP body as it arrives
                    self.app.budget.hold(0, len(data))
                except HTTPError as exc:  # answered in its turn, in order
                    self.waiting.append(exc)
                else:
                    self.waiting.append(data)
                self.arrived.set()
        finally:
            self.closed = True
            self.arrived.set()
            if self.mailbox is not None:
                self.mailbox.signal(DISCONNECTED)

    async def _turn(self, message: bytes | HTTPError) -> None:
        """One ``response.create``: the events of its answer, or an ``error`` event.
        ``message`` keeps its charge (taken on arrival) until the turn ends."""
        if isinstance(message, HTTPError):
            await self._error(message)
            return
        try:
            await self.app._admitted(self.served, self._charged(message), self._answer, self.key)
        except HTTPError as exc:
            await self._error(exc)
        finally:
            self.app.budget.release(len(message))

    def _charged(self, message: bytes) -> Any:
        """How a turn's body is read: its message decoded within the budget (the
        decoded JSON is the peak a body's parse is charged for), then the body charged."""
        app = self.app

        async def read(held: list[int]) -> bytes:
            decoding = parsing_cost(message)
            app.budget.hold_parsed(held[0] + len(message), decoding)
            try:
                if len(message) > PARSE_INLINE_BYTES:  # megabytes of JSON: not on the loop
                    body = await app.runtime.to_thread(socket_body, self.served, message)
                else:
                    body = socket_body(self.served, message)
            finally:
                app.budget.release(decoding)
            app.budget.hold(held[0], len(body))
            held[0] += len(body)
            return body

        return read

    async def _answer(self, request: Any, held: list[int]) -> None:
        app = self.app
        request = msgspec.structs.replace(request, stream=True)
        assert self.served.socket_encoder is not None
        encoder = self.served.socket_encoder(request, app.stamps)
        self.mailbox = mailbox = Mailbox(app.runtime, max_bytes=app.config.max_unsent_bytes)
        if app._aborted or self.closed:
            mailbox.signal(ABORTED if app._aborted else DISCONNECTED)
        app._mailboxes.add(mailbox)
        try:
            async with app.runtime.task_group() as tasks:
                tasks.start_soon(app._produce, request, mailbox)
                await self._forward(mailbox, encoder)
        finally:
            app._mailboxes.discard(mailbox)
            self.mailbox = None

    async def _forward(self, mailbox: Mailbox, encoder: Any) -> None:
        """The turn's events as text messages, until its terminal event."""
        while True:
            got = await mailbox.get(None)
            if got is DISCONNECTED:
                log.info("websocket client disconnected; generation cancelled")
                return
            events: list[Event]
            if got is ABORTED:
                events = [shutting_down()]
            elif got is None:
                events = [ended_early()]
            else:
                assert not isinstance(got, Marker)
                events = got
            for event in events:
                encoder.encode(event)
            for data in encoder.messages:
                await self.send({"type": "websocket.send", "text": data.decode()})
            encoder.messages.clear()
            if isinstance(events[-1], Done | Error):
                if got is ABORTED:
                    await self.send({"type": "websocket.close", "code": GOING_AWAY})
                return

    async def _error(self, exc: HTTPError) -> None:
        """An ``error`` event with the status HTTP would answer (the socket stays open):
        the openai SDK's ``ResponseWsError``, its details in ``error`` as in HTTP's error
        body (the same fields flat too, as the HTTP stream's ``error`` event has them)."""
        word = OPENAI.word(exc.kind)
        event = {
            "type": "error",
            "status": exc.status,
            "error": {"type": word, "code": word, "message": exc.message, "param": None},
            "code": word,
            "message": exc.message,
            "param": None,
            "sequence_number": 0,
        }
        await self.send({"type": "websocket.send", "text": msgspec.json.encode(event).decode()})
