"""One Responses turn over a WebSocket, sans I/O: `Exchange`'s surface, RFC 6455 underneath.

OpenAI's Responses API also streams over a WebSocket (``wss://…/v1/responses``,
what the openai SDK's ``client.responses.connect()`` opens: openai
``resources/responses/responses.py`` ``_prepare_url`` turns the base URL's
``http(s)`` into ``ws(s)`` and appends ``/responses``; ``_websocket_connection.py``
``_websocket_connect_options`` sends the client's auth headers (``Authorization:
Bearer``) and default headers on the upgrade, no compression). A turn is one text
message ``{"type": "response.create", ...the Responses request body without
"stream"...}``; the answer is one JSON text message per stream event, the very
events HTTP sends as SSE.

So this exchange sends the upgrade (the request's own headers, its key among them),
reads the 101 and only then (RFC 6455 forbids anything before it) hands the driver
the ``response.create`` message through `pending`. Each text message goes to the
unchanged Responses machine as the SSE event it would be over HTTP, after a
synthetic ``200 text/event-stream``: one decoder of those events, whatever carried
them. A refused upgrade (401, 429, 503 …) goes to the call's error path with its
status, headers and body, exactly as an HTTP error response would, so it is
classified and retried the same way. Pings are answered, fragments joined (each
message capped at ``Options.max_event_bytes``), a Close or an EOF before the
terminal event is a ``network`` `Error`, never `Done`. After the terminal event a
Close frame goes out and the socket is closed: one socket per turn, never pooled.

wsproto draws the handshake nonce and the frame masking keys from ``os.urandom``
itself (RFC 6455 asks for a strong source); nothing a caller sees depends on them.
"""

from __future__ import annotations

from contextlib import suppress
from typing import Any, Final

import msgspec
from wsproto import ConnectionType, WSConnection
from wsproto.connection import ConnectionState
from wsproto.events import (
    AcceptConnection,
    BytesMessage,
    CloseConnection,
    Ping,
    RejectConnection,
    RejectData,
    Request,
    TextMessage,
)
from wsproto.events import (
    Event as WSEvent,
)
from wsproto.utilities import LocalProtocolError, RemoteProtocolError

from .._events import Error, Event
from ._exchange import Exchange

__all__ = ["SocketExchange", "response_create"]

#: Request headers that describe an HTTP body or its framing; the upgrade carries none.
_BODY_HEADERS: Final = frozenset(
    {
        "host",
        "content-length",
        "content-type",
        "transfer-encoding",
        "accept",
        "accept-encoding",
        "connection",
        "upgrade",
    }
)

#: What the Responses machine is told the stream is: the SSE it reads over HTTP.
_EVENT_STREAM: Final = ("content-type", "text/event-stream")

_DECODER: Final = msgspec.json.Decoder(dict[str, Any])
_ENCODER: Final = msgspec.json.Encoder()


def response_create(body: bytes) -> bytes:
    """The ``response.create`` message for a Responses request body (its ``stream``
    flag dropped: over a WebSocket every turn streams)."""
    fields = _DECODER.decode(body)
    fields.pop("stream", None)
    return _ENCODER.encode({"type": "response.create", **fields})


def _sse(message: bytes) -> bytes:
    """A JSON message as one SSE event. JSON strings hold no raw line breaks, so any
    CR or LF is whitespace between tokens: made a space, the event stays one line."""
    return b"data: " + message.replace(b"\r", b" ").replace(b"\n", b" ") + b"\n\n"


class SocketExchange(Exchange):
    """An `Exchange` whose request is a WebSocket upgrade and one ``response.create``.

    The driver sends `bytes_to_send()` (the upgrade), then, whenever `pending`
    holds bytes (the ``response.create`` after the 101, a pong, the closing Close
    frame), sends them too. Never `reusable`: the socket is closed after the turn.
    """

    def _begin(self) -> None:
        """The WebSocket's own state, beside `Exchange`'s (``reuse`` is never given:
        a WebSocket is never pooled)."""
        self._ws = WSConnection(ConnectionType.CLIENT)
        #: the message being received, joined from its fragments
        self._message = bytearray()
        self._rejected = False

    # -- sending -------------------------------------------------------------
    def bytes_to_send(self) -> bytes:
        """The upgrade request: the provider's headers (credentials included) without
        the ones about an HTTP body; wsproto adds Host, Upgrade and the key."""
        extra = [
            (k.encode("latin-1"), v.encode("latin-1"))
            for k, v in self._headers
            if k.lower() not in _BODY_HEADERS
        ]
        return self._ws.send(
            Request(host=self.target.authority, target=self.target.target, extra_headers=extra)
        )

    # -- receiving -----------------------------------------------------------
    def receive_bytes(self, data: bytes | bytearray, *, eager: bool = False) -> list[Event]:
        """Feed bytes from the socket (never empty: EOF is `receive_eof`)."""
        if self._broken or not data or self.finished:
            return []
        self.bytes_received += len(data)
        try:
            self._ws.receive_data(bytes(data))
        except RemoteProtocolError as exc:
            return self._malformed(exc)
        return self._events()

    def pump(self, *, some: bool = False) -> list[Event]:
        """Nothing is left unread: every read is decoded at once."""
        return []

    def receive_eof(self) -> list[Event]:
        """The server closed the TCP connection."""
        self._closed_by_peer = True
        if self.finished:
            return []
        if self._rejected:  # a refusal's body delimited by the close
            return self._finish_call(self.call.receive_eof())
        if self.status is None:
            return self.fail(
                Error.network(
                    f"connection closed by {self.target.host} before the WebSocket upgrade"
                    " was answered"
                )
            )
        return self.fail(
            Error.network(
                f"WebSocket to {self.target.host} closed mid-stream, before the response"
                " finished (no Close frame)"
            )
        )

    @property
    def needs_tail(self) -> bool:
        return False

    @property
    def reusable(self) -> bool:
        return False

    # -- internals -------------------------------------------------------------
    def _events(self) -> list[Event]:
        out: list[Event] = []
        try:
            for event in self._ws.events():
                if isinstance(event, TextMessage):
                    self._text(event, out)
                elif isinstance(event, AcceptConnection):
                    self._accepted(event.extra_headers, out)
                elif isinstance(event, RejectConnection):
                    self._refused(event, out)
                elif isinstance(event, RejectData):
                    self._refusal_body(event, out)
                elif isinstance(event, Ping):
                    self._queue(event.response())
                elif isinstance(event, CloseConnection):
                    self._closed(event, out)
                elif isinstance(event, BytesMessage):
                    out += self.fail(
                        Error.protocol(
                            f"{self.target.host} sent a binary WebSocket message; "
                            "Responses events are text"
                        )
                    )
                if self.finished:
                    break
        except RemoteProtocolError as exc:
            out += self._malformed(exc)
        if self.finished and not self._broken:
            self._close()
        return out

    def _accepted(self, headers: list[tuple[bytes, bytes]], out: list[Event]) -> None:
        """The 101: the turn's message may go now; the machine hears a 200 event stream."""
        self.status = 101
        self.response_headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in headers]
        self._queue(TextMessage(data=response_create(self.request.body).decode()))
        kept = [(k, v) for k, v in self.response_headers if k.lower() != "content-type"]
        out += self._finish_call(self.call.receive_response(200, [*kept, _EVENT_STREAM]))

    def _refused(self, event: RejectConnection, out: list[Event]) -> None:
        """No upgrade: an error status goes to the call's error path like HTTP's; a
        success status means the server did not speak WebSocket at all."""
        self.status = event.status_code
        self.response_headers = [
            (k.decode("latin-1"), v.decode("latin-1")) for k, v in event.headers
        ]
        if 200 <= event.status_code < 300:
            out += self.fail(
                Error.protocol(
                    f"{self.target.host} answered the WebSocket upgrade with HTTP "
                    f"{event.status_code}, not 101; it does not serve Responses over a "
                    'WebSocket (use Options(transport="http"))'
                )
            )
            return
        self._rejected = True
        out += self._finish_call(
            self.call.receive_response(event.status_code, self.response_headers)
        )
        if not event.has_body and not self.finished:
            out += self._finish_call(self.call.receive_eof())

    def _refusal_body(self, event: RejectData, out: list[Event]) -> None:
        self.body_bytes += len(event.data)
        if self.body_bytes > self._options.max_response_bytes:
            out += self._too_big()
            return
        if event.data and not self.finished:
            out += self._finish_call(self.call.receive_data(bytes(event.data)))
        if event.body_finished and not self.finished:
            out += self._finish_call(self.call.receive_eof())

    def _text(self, event: TextMessage, out: list[Event]) -> None:
        """A message fragment: joined, capped, and once whole given to the machine."""
        piece = event.data.encode()
        self.body_bytes += len(piece)
        self._message += piece
        cap = self._options.max_event_bytes
        if len(self._message) > cap or self.body_bytes > self._options.max_response_bytes:
            out += self.fail(
                Error.limit(
                    f"a WebSocket message from {self.target.host} exceeded "
                    f"max_event_bytes={cap} (or the stream max_response_bytes="
                    f"{self._options.max_response_bytes}); raise the Options cap"
                )
            )
            return
        if not event.message_finished:
            return
        message, self._message = bytes(self._message), bytearray()
        events = self._finish_call(self.call.receive_data(_sse(message)))
        self._timer.body(len(message), bool(events))
        out += events

    def _closed(self, event: CloseConnection, out: list[Event]) -> None:
        """A Close frame before the terminal event: the turn was cut. (wsproto also says
        Close for a frame it could not parse, e.g. text that is not UTF-8: then the
        server said nothing, and the message says what was wrong.)"""
        reason = f": {event.reason}" if event.reason else ""
        if self._ws.state is not ConnectionState.REMOTE_CLOSING:
            out += self._malformed(f"code {event.code}{reason}")
            return
        self._queue(event.response())
        out += self.fail(
            Error.network(
                f"WebSocket closed by {self.target.host} mid-stream (code {event.code}{reason}),"
                " before the response finished"
            )
        )

    def _close(self) -> None:
        """The turn is over: a clean Close frame (the socket is then closed, not pooled)."""
        if self._ws.state is ConnectionState.OPEN:
            self._queue(CloseConnection(code=1000))

    def _queue(self, event: WSEvent) -> None:
        with suppress(LocalProtocolError):  # the connection is already closing: nothing to say
            self.pending += self._ws.send(event)

    def _malformed(self, exc: Exception | str) -> list[Event]:
        where = "WebSocket upgrade answer" if self.status is None else "WebSocket frame"
        return self.fail(Error.network(f"malformed {where} from {self.target.host}: {exc}"))
