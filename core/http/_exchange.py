"""One HTTP/1.1 request/response exchange driving a provider `Call`, sans I/O.

Everything HTTP lives here once, for every shell: framing the request,
parsing the response with h11, handing status, headers and body chunks to
the provider call, capping header and body sizes, turning broken HTTP
(truncated chunked encoding, a reset, garbage) into a ``network`` `Error`,
undoing a Content-Encoding the server applied anyway, telling the shell which
timer applies and what to say when it fires, and whether the connection may
go back to the keep-alive pool (only with nothing unread: no byte after the
response, no EOF, and silent at checkout).

h11 is imported only by `streamfn.core.http`. The core's runtime dependency is
msgspec alone; the shells' extras bring h11. Importing `streamfn.core` never
imports this.

Clocks stay outside: the shell passes ``now`` (its own monotonic clock) to
`Exchange.timer`, and the wall-clock time of sending (``sent_at``) comes in too.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Final

import h11
import msgspec

from .._call import Call
from .._classify import parse_retry_after
from .._events import Error, ErrorKind, Event, Start
from .._options import Options
from ..catalogue._models import Model
from ..providers._base import ProviderCall
from ._chunked import ChunkedBody, is_chunked, keeps_alive
from ._content_coding import BodyDecoder, CodingError, decoder_for
from ._read_timer import ReadTimer
from ._target import MAX_HEADER_BYTES, USER_AGENT, parse_target

__all__ = ["MAX_TAIL_BYTES", "Exchange"]

#: How many body bytes after the terminal event are read to reuse the socket;
#: past that, closing and reconnecting is cheaper than draining.
MAX_TAIL_BYTES: Final = 64 << 10


class Exchange:
    """Request bytes out, response bytes in, provider events out.

    The shell: sends `bytes_to_send()`, then loops ``deadline, on_expiry =
    timer(now)`` / receive with that deadline / `receive_bytes` until
    `finished`; on EOF it calls `receive_eof`, on a socket error
    `connection_lost`, on an expired timer ``fail(on_expiry)``. Afterwards
    `reusable` says whether the socket may serve the next request.

    Exactly one `Start` and one terminal event come out, whatever happens;
    nothing after the terminal event. ``deadline`` is the caller's absolute
    total deadline on the shell's clock, if any.
    """

    #: bytes to send as the answer goes (`SocketExchange`'s); the driver sends, empties it
    pending: bytes = b""

    def __init__(
        self,
        call: Call,
        model: Model,
        options: Options,
        *,
        headers: Iterable[tuple[str, str]] | None = None,
        deadline: float | None = None,
        reuse: Exchange | None = None,
        sent_at: datetime | None = None,
    ) -> None:
        self.call = call
        self.request = call.request
        self.target = parse_target(self.request.url)
        self._model = model
        self._options = options
        self._headers = list(self.request.headers if headers is None else headers)
        self._timer = ReadTimer(options, deadline)
        #: wall-clock time of sending: the reference for a Retry-After HTTP-date
        #: when the response carries no Date header
        self._sent_at = sent_at
        self.reused = reuse is not None and reuse.reusable
        self._h11 = (
            reuse._take_over() if reuse is not None and self.reused else _client_connection()
        )
        #: the response body when it is chunked: read many chunks at a time, not by h11
        self._chunked: ChunkedBody | None = None
        self.status: int | None = None
        self.response_headers: list[tuple[str, str]] = []
        self.body_bytes = 0
        #: body bytes after decoding a Content-Encoding (equal to body_bytes without one)
        self.decoded_bytes = 0
        self.bytes_received = 0
        self._tail_bytes = 0
        self._decoder: BodyDecoder | None = None
        self.finished = False
        self._started = False
        self._broken = False
        #: an eager `receive_bytes` returned before h11 had given all it holds
        self._unpumped = False
        self._body_ended = False
        self._closed_by_peer = False
        self._begin()

    def _begin(self) -> None:
        """What a subclass sets up beside the above (`SocketExchange`: its WebSocket)."""

    def _take_over(self) -> h11.Connection:
        """The HTTP state for the next exchange on this socket (this one is then not `reusable`)."""
        if self._chunked is None:
            self._h11.start_next_cycle()
        else:  # h11 did not read this body (`ChunkedBody` did): a new cycle from scratch
            self._h11 = _client_connection()
            self._chunked = None
        return self._h11

    # -- sending -------------------------------------------------------------
    def bytes_to_send(self) -> bytes:
        """The request head and body, framed with Content-Length."""
        names = {name.lower() for name, _ in self._headers}
        headers = list(self._headers)
        if "host" not in names:
            headers.insert(0, ("Host", self.target.authority))
        if "content-length" not in names and "transfer-encoding" not in names:
            headers.append(("Content-Length", str(len(self.request.body))))
        if "user-agent" not in names:
            headers.append(("User-Agent", USER_AGENT))
        if "accept-encoding" not in names:
            # a compressed stream arrives in bursts when the compressor flushes, and
            # decoding it costs CPU for nothing: ask for the bytes as produced
            headers.append(("Accept-Encoding", "identity"))
        out = self._h11.send(
            h11.Request(method=self.request.method, target=self.target.target, headers=headers)
        )
        out = (out or b"") + (self._h11.send(h11.Data(data=self.request.body)) or b"")
        return out + (self._h11.send(h11.EndOfMessage()) or b"")

    # -- timers ----------------------------------------------------------------
    def timer(self, now: float) -> tuple[float, Error]:
        """The deadline for the next receive and the `Error` to end with if it passes
        (`core/http/_read_timer.py`: first byte, idle with a heartbeat allowance,
        total)."""
        return self._timer.next(now)

    # -- receiving -----------------------------------------------------------
    def receive_bytes(self, data: bytes | bytearray, *, eager: bool = False) -> list[Event]:
        """Feed bytes from the socket (never empty: EOF is `receive_eof`).

        ``eager``: return as soon as one piece of the body has produced events,
        leaving the rest of ``data`` for `pump`. One read can hold hundreds of
        events; the caller gets the first without waiting for the others to
        be decoded (the shells' time to first event).
        """
        if self._broken or not data:
            return []
        self.bytes_received += len(data)
        body = self._chunked
        if body is not None and eager and self._decoder is None and not self.finished:
            piece = body.whole_chunk(data) if type(data) is bytes else None
            if piece is not None:  # a live stream's read: no loop, no h11
                return self._take(piece)
        if self.finished:
            self._tail_bytes += len(data)
        if self._chunked is not None:
            self._chunked.feed(data if isinstance(data, bytes) else bytes(data))
            return self._pump(eager)
        try:
            self._h11.receive_data(data if isinstance(data, bytes) else bytes(data))
        except h11.RemoteProtocolError as exc:
            return self._protocol_failure(exc)
        return self._pump(eager)

    def pump(self, *, some: bool = False) -> list[Event]:
        """The events of bytes an eager `receive_bytes` left unread (none otherwise).

        ``some``: the next share of them only (call again until none come): a big
        read's later events are decoded after its first ones went out.
        """
        if not self._unpumped:
            return []
        self._unpumped = False
        return self._pump(some=some)

    def receive_eof(self) -> list[Event]:
        """The server closed its side."""
        self._closed_by_peer = True
        if self.finished:
            self._broken = True  # a tail that never came: the socket is done
            return []
        if self.status is None and not self._h11.trailing_data[0]:
            return self.fail(
                Error.network(f"connection closed by {self.target.host} before a response arrived")
            )
        if self._chunked is not None:
            self._chunked.close()
        else:
            self._h11.receive_data(b"")
        events = self._pump()
        if not self.finished:
            # h11 saw a clean close of a read-until-close body, or nothing at all
            events += self._finish_call(self.call.receive_eof())
        return events

    def connection_lost(self, exc: BaseException) -> list[Event]:
        """The socket failed (reset, broken pipe) while this exchange was running."""
        self._closed_by_peer = True
        detail = str(exc) or type(exc).__name__
        where = "mid-body" if self.status is not None else "before the response"
        return self.fail(Error.network(f"connection lost {where}: {detail}"))

    def fail(self, error: Error) -> list[Event]:
        """End the stream with ``error`` (a timer fired, a cap was hit, the socket broke)."""
        self._broken = True
        if self.finished:
            return []
        self.finished = True
        out: list[Event] = []
        if not self._started:
            self._started = True
            out.append(
                Start(api=self._model.api, provider=self._model.provider, model=self._model.id)
            )
        if isinstance(self.call, ProviderCall):  # what the request was billed before it broke
            error = self.call.reported(error)
        out.append(error)
        return out

    @property
    def needs_tail(self) -> bool:
        """The provider's terminal event came but the HTTP body has not ended yet.

        OpenAI's ``data: [DONE]`` usually arrives a packet before the final
        zero-length chunk; reading that tail (briefly, after the caller has
        the terminal event) is what makes the socket reusable.
        """
        return (
            self.finished
            and not self._broken
            and self._tail_bytes <= MAX_TAIL_BYTES
            and self._h11.our_state is h11.DONE
            and self._body_unread()
            and self._reusable_framing()
        )

    def _reusable_framing(self) -> bool:
        """Could this response leave the socket reusable at all? Only a framed body
        (Content-Length or chunked) on a connection the server keeps open: waiting
        for the end of a close-delimited body would delay the caller for nothing."""
        framed = keep_open = False
        for name, value in self.response_headers:
            lname = name.lower()
            if lname in ("content-length", "transfer-encoding"):
                framed = True
            elif lname == "connection" and "close" in value.lower():
                return False
        keep_open = self._h11.their_http_version == b"1.1"
        return framed and keep_open

    @property
    def stale_keep_alive(self) -> bool:
        """The pooled socket had been closed by the server before we used it.

        Servers drop idle keep-alive connections whenever they like; such a
        failure says nothing about the request, so the shell resends it on a
        new connection without counting an attempt.
        """
        return self.reused and self._closed_by_peer and self.bytes_received == 0

    @property
    def reusable(self) -> bool:
        """May the socket carry another request? Only after a complete, clean exchange
        that left nothing unread.

        Any byte after the end of the response (a second response in the same
        packet, an early ``408``) or a close already seen would be read as the
        answer to the next request on this socket: one caller's answer given to
        another. h11 keeps such bytes as trailing data; ``Connection: close``
        leaves h11 in MUST_CLOSE, not DONE. Bytes that arrive while the socket
        sits in the pool are caught by the checkout check (`ClientBase`).
        """
        if not self.finished or self._broken or self._h11.our_state is not h11.DONE:
            return False
        if self._chunked is not None:
            body = self._chunked
            return (
                body.done
                and not body.leftover
                and not body.closed
                and keeps_alive(self._h11.their_http_version, self.response_headers)
            )
        return self._h11.their_state is h11.DONE and self._h11.trailing_data == (b"", False)

    def _body_unread(self) -> bool:
        """Is the response body still arriving?"""
        if self._chunked is not None:
            return not self._chunked.done
        return self._h11.their_state is h11.SEND_BODY

    # -- internals -------------------------------------------------------------
    def _pump(self, eager: bool = False, some: bool = False) -> list[Event]:
        if self._chunked is not None:
            return self._pump_chunked(eager, some)
        events: list[Event] = []
        while True:
            try:
                event = self._h11.next_event()
            except h11.RemoteProtocolError as exc:
                return events + self._protocol_failure(exc)
            if event is h11.NEED_DATA or event is h11.PAUSED:
                return events
            if isinstance(event, h11.Data):  # a Content-Length or read-until-close body
                if self._data(bytes(event.data), events, eager):
                    return events
            elif isinstance(event, h11.Response):
                self.status = event.status_code
                self.response_headers = [
                    (k.decode("latin-1"), v.decode("latin-1")) for k, v in event.headers
                ]
                failure = self._choose_decoder()
                if failure is not None:
                    return events + failure
                if not self.finished:
                    events += self._finish_call(
                        self.call.receive_response(self.status, self.response_headers)
                    )
                if is_chunked(self.request.method, event, self._h11):
                    self._chunked = ChunkedBody(MAX_HEADER_BYTES)
                    rest = self._h11.trailing_data[0]
                    if rest:
                        self._chunked.feed(rest)
                    return events + self._pump_chunked(eager)
            elif isinstance(event, h11.EndOfMessage):
                events += self._message_end()
            elif isinstance(event, h11.ConnectionClosed):
                if not self.finished:
                    events += self._finish_call(self.call.receive_eof())
                return events
            # InformationalResponse (1xx): nothing to do

    def _pump_chunked(self, eager: bool, some: bool = False) -> list[Event]:
        """A chunked body: the chunks that are here, handed to the provider at once
        (``eager``: one by one until events come; ``some``: see `pump`). With a
        Content-Encoding one by one, as h11 gave them: a decoded size cap fires
        where it did."""
        body = self._chunked
        assert body is not None
        events: list[Event] = []
        single = eager or self._decoder is not None
        while True:
            budget = self._options.max_response_bytes - self.body_bytes
            try:
                data = body.read(budget, single=single)
            except h11.RemoteProtocolError as exc:
                return events + self._protocol_failure(exc)
            if data is None:
                break
            if self._data(data, events, eager or some):
                return events
        if body.done and not self._body_ended:
            events += self._message_end()
        return events

    def _data(self, data: bytes, events: list[Event], eager: bool) -> bool:
        """Body bytes to the call, its events onto ``events``; True: stop reading for now
        (a cap was hit, or, ``eager``, the events may go out before the rest is decoded)."""
        events += self._take(data)
        if self.body_bytes > self._options.max_response_bytes:
            return True  # `_take` ended the stream at the cap
        if eager and events and not self.finished:
            self._unpumped = True
            return True
        return False

    def _take(self, data: bytes) -> list[Event]:
        """Body bytes: counted against ``max_response_bytes``, then (unless the call has
        finished) given to the call, decoded first if the server compressed them, and
        the read timer told whether they made an event (bytes that make none are
        heartbeats). Every body piece comes here: through `_data`, or, for a live
        stream's read that is one whole chunk, straight from `receive_bytes` (the
        one-event path, hence no further call before the provider's)."""
        self.body_bytes += len(data)
        if self.body_bytes > self._options.max_response_bytes:
            return self._too_big()
        if self.finished:
            return []
        if self._decoder is None:
            self.decoded_bytes += len(data)
            events = self._finish_call(self.call.receive_data(data))
        else:
            events = self._compressed(data)
        self._timer.body(len(data), bool(events))
        return events

    def _message_end(self) -> list[Event]:
        """The response body ended (h11's EndOfMessage, or the chunked body's end)."""
        self._body_ended = True
        events: list[Event] = []
        if not self.finished:
            events += self._body_end()
        if not self.finished:
            events += self._finish_call(self.call.receive_eof())
        return events

    def _finish_call(self, events: list[Event]) -> list[Event]:
        if events:
            self._started = True
        if self.call.finished:
            self.finished = True
            last = events[-1] if events else None
            if isinstance(last, Error):
                if last.kind is ErrorKind.LIMIT:
                    # a cap was hit: the rest of an oversized body is not worth reading
                    self._broken = True
                events = [*events[:-1], self._with_retry_after(last)]
        return events

    def _with_retry_after(self, error: Error) -> Error:
        """Resolve a Retry-After HTTP-date the provider could not (it has no clock)."""
        if error.retry_after is not None or error.status is None or error.status != self.status:
            return error
        seconds = parse_retry_after(self.response_headers, now=self._sent_at)
        if seconds is None:
            return error
        return msgspec.structs.replace(error, retry_after=seconds)

    def _too_big(self) -> list[Event]:
        return self.fail(
            Error.limit(
                "response body exceeded max_response_bytes="
                f"{self._options.max_response_bytes}; raise Options.max_response_bytes"
            )
        )

    def _choose_decoder(self) -> list[Event] | None:
        """Pick the Content-Encoding decoder; events to end with when it is unsupported.

        An error response in an unknown coding still reaches the provider raw:
        its status says what went wrong even when its body is unreadable.
        """
        try:
            self._decoder = decoder_for(self.response_headers)
        except CodingError as exc:
            if self.status is not None and 200 <= self.status < 300:
                return self.fail(Error.protocol(f"{self.target.host} answered with {exc}"))
        return None

    def _compressed(self, data: bytes) -> list[Event]:
        """Body bytes the server compressed, decoded, to the provider call."""
        assert self._decoder is not None
        try:
            return self._decoded(self._decoder.feed(data))
        except CodingError as exc:
            if self.status is not None and not 200 <= self.status < 300:
                # an error body: its status says enough; read the rest as it is
                self._decoder = None
                return self._finish_call(self.call.receive_data(data))
            return self._undecodable(exc)

    def _body_end(self) -> list[Event]:
        if self._decoder is None:
            return []
        try:
            return self._decoded(self._decoder.finish())
        except CodingError as exc:
            if self.status is not None and not 200 <= self.status < 300:
                return []
            return self._undecodable(exc)

    def _decoded(self, pieces: Iterable[bytes]) -> list[Event]:
        events: list[Event] = []
        for piece in pieces:
            self.decoded_bytes += len(piece)
            if self.decoded_bytes > self._options.max_response_bytes:
                return events + self._too_big()
            events += self._finish_call(self.call.receive_data(piece))
            if self.finished:
                break
        return events

    def _undecodable(self, exc: CodingError) -> list[Event]:
        # the response arrived: resending would bill the same answer again
        return self.fail(Error.protocol(f"response from {self.target.host}: {exc}"))

    def _protocol_failure(self, exc: h11.RemoteProtocolError) -> list[Event]:
        if exc.error_status_hint == 431 or "buffer too long" in str(exc).lower():
            return self.fail(Error.limit(f"response head larger than {MAX_HEADER_BYTES} bytes"))
        if self.status is None:
            message = f"malformed HTTP response from {self.target.host}: {exc}"
        elif "peer closed" in str(exc):
            message = f"connection closed mid-body (incomplete HTTP body): {exc}"
        else:
            message = f"malformed HTTP body from {self.target.host}: {exc}"
        return self.fail(Error.network(message, status=self.status))


def _client_connection() -> h11.Connection:
    return h11.Connection(h11.CLIENT, max_incomplete_event_size=MAX_HEADER_BYTES)
