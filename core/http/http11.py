"""One HTTP/1.1 request/response exchange driving a provider `Call`, sans I/O.

Both shells (trio and asyncio) move bytes; everything HTTP lives here once:
framing the request, parsing the response with h11, handing status, headers
and body chunks to the provider call, capping header and body sizes, turning
broken HTTP (truncated chunked encoding, a reset, garbage) into a
``network`` `Error`, undoing a Content-Encoding the server applied anyway,
telling the shell which timer applies and what to say when it fires, and
whether the connection may go back to the keep-alive pool (only with nothing
unread: no byte after the response, no EOF, and silent at checkout). The
CONNECT request that opens an HTTPS_PROXY tunnel is here too.

h11 is imported only by this module. The core's runtime dependency is
msgspec alone; the ``trio`` and ``asyncio`` extras, which every user of a
shell installs, bring h11. Importing `streamfn.core` never imports this.

Clocks stay outside: the shell passes ``now`` (its own monotonic clock) to
`Exchange.timer`, exactly as `sign_request` takes its timestamp.
"""

from __future__ import annotations

import abc
import logging
import os
import random
import ssl
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Generator, Iterable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from datetime import UTC, datetime
from typing import Final, Generic, NamedTuple, Self, TypeVar, cast
from urllib.parse import urlsplit

import h11
import msgspec

from ..call import Call, open_call
from ..classify import parse_retry_after
from ..credentials import with_credentials
from ..events import Error, ErrorKind, Event, Start
from ..fallback import FallbackModel, check_chain, fall_back
from ..messages import AssistantMessage, Context
from ..models import Model
from ..options import Options
from ..redact import redact_url
from ..responses_upgrade import upgrade_to_responses
from ..retry import FirstOutputGate, Retry, RetryPolicy
from ..text_tools import with_text_tool_calls
from ..tracing import traced
from .content_coding import BodyDecoder, CodingError, decoder_for
from .proxy_env import Proxy, proxy_for

__all__ = [
    "EXPIRED",
    "ClientBase",
    "Connect",
    "ConnectTunnel",
    "Emit",
    "Exchange",
    "PoolKey",
    "PooledConnection",
    "Receive",
    "Release",
    "Send",
    "Sleep",
    "Step",
    "Target",
    "TunnelError",
    "connect_error",
    "connect_timeout_error",
    "drive",
    "parse_target",
    "wire_headers",
    "with_credentials",
]

#: Cap on a response head (status line + headers); a server dripping headers
#: forever (slow loris) hits the first-byte timer, one sending megabytes hits this.
MAX_HEADER_BYTES: Final = 64 << 10
USER_AGENT: Final = "streamfn/0.1"
#: How long a shell waits for the end of the HTTP body after the terminal event
#: before giving up on reusing the socket (the terminal event waits for it).
TAIL_GRACE: Final = 1.0
#: How many body bytes after the terminal event are read to reuse the socket;
#: past that, closing and reconnecting is cheaper than draining.
MAX_TAIL_BYTES: Final = 64 << 10


def _seconds(value: float) -> str:
    return f"{float(value)} s"


class Target(NamedTuple):
    """Where a request goes: ``origin`` is the pool key, ``target`` the request-target."""

    scheme: str
    host: str
    port: int
    target: str

    @property
    def authority(self) -> str:
        default = 443 if self.scheme == "https" else 80
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if self.port == default else f"{host}:{self.port}"

    @property
    def origin(self) -> tuple[str, str, int]:
        return (self.scheme, self.host, self.port)


def parse_target(url: str) -> Target:
    """Split an ``http(s)://`` URL; raises ValueError (URL redacted) for anything else."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"not an http(s) URL: {redact_url(url)!r}")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise ValueError(f"invalid port in {redact_url(url)!r}") from None
    target = parts.path or "/"
    if parts.query:
        target += "?" + parts.query
    return Target(parts.scheme, parts.hostname, port, target)


def connect_error(target: Target, exc: BaseException) -> Error:
    """A failed TCP connect or TLS handshake, named so the caller can act on it."""
    tls = _tls_error(exc)
    cause = tls or exc
    detail = str(cause) or type(cause).__name__
    what = "TLS handshake with" if tls is not None else "connect to"
    return Error.network(f"{what} {target.host}:{target.port} failed: {detail}")


def connect_timeout_error(target: Target, seconds: float) -> Error:
    return Error.network(
        f"connect timeout: no connection to {target.host}:{target.port} within {_seconds(seconds)}"
    )


def _tls_error(exc: BaseException) -> BaseException | None:
    """The TLS error behind ``exc`` (trio wraps it in BrokenResourceError)."""
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            return None
        if isinstance(seen, ssl.SSLError | ssl.CertificateError):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


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
        self._deadline = deadline
        #: wall-clock time of sending: the reference for a Retry-After HTTP-date
        #: when the response carries no Date header
        self._sent_at = sent_at
        self._h11: h11.Connection
        if reuse is not None and reuse.reusable:
            # after this the previous exchange is no longer `reusable`: one owner at a time
            reuse._h11.start_next_cycle()
            self._h11 = reuse._h11
            self.reused = True
        else:
            self._h11 = h11.Connection(h11.CLIENT, max_incomplete_event_size=MAX_HEADER_BYTES)
            self.reused = False
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
        self._fresh_data = False
        self._phase_ref: float | None = None
        self._body_seen = False
        self._closed_by_peer = False
        # what each timer says when it fires: fixed for the exchange, built once
        self._idle_error = Error.network(
            f"idle timeout: no data for {_seconds(options.idle_timeout)}"
        )
        self._first_byte_error = Error.network(
            f"first-byte timeout: no response body within {_seconds(options.first_byte_timeout)}"
        )
        total = options.total_timeout if options.total_timeout is not None else 0.0
        self._total_error = Error.network(
            f"total timeout: the stream did not finish within {_seconds(total)}"
        )

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
        """The deadline for the next receive and the `Error` to end with if it passes.

        Until the first body byte: ``first_byte_timeout`` from the first call
        (the request was just sent; header bytes do not reset it, so a server
        dripping its headers cannot hold us forever). After it:
        ``idle_timeout`` from the last receive that brought bytes.
        """
        opts = self._options
        if self._phase_ref is None or (self._body_seen and self._fresh_data):
            self._phase_ref = now
            self._fresh_data = False
        if self._body_seen:
            deadline, error = self._phase_ref + opts.idle_timeout, self._idle_error
        else:
            deadline, error = self._phase_ref + opts.first_byte_timeout, self._first_byte_error
        if self._deadline is not None and self._deadline <= deadline:
            return self._deadline, self._total_error
        return deadline, error

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
        if self.finished:
            self._tail_bytes += len(data)
        try:
            self._h11.receive_data(data if isinstance(data, bytes) else bytes(data))
        except h11.RemoteProtocolError as exc:
            return self._protocol_failure(exc)
        return self._pump(eager)

    def pump(self) -> list[Event]:
        """The events of bytes an eager `receive_bytes` left unread (none otherwise)."""
        if not self._unpumped:
            return []
        self._unpumped = False
        return self._pump()

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
            and self._h11.their_state is h11.SEND_BODY
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
        return (
            self.finished
            and not self._broken
            and self._h11.our_state is h11.DONE
            and self._h11.their_state is h11.DONE
            and self._h11.trailing_data == (b"", False)
        )

    # -- internals -------------------------------------------------------------
    def _pump(self, eager: bool = False) -> list[Event]:
        events: list[Event] = []
        while True:
            try:
                event = self._h11.next_event()
            except h11.RemoteProtocolError as exc:
                return events + self._protocol_failure(exc)
            if event is h11.NEED_DATA or event is h11.PAUSED:
                return events
            if isinstance(event, h11.Data):  # the per-chunk case first
                self._body_seen = True
                self._fresh_data = True
                self.body_bytes += len(event.data)
                if self.body_bytes > self._options.max_response_bytes:
                    return events + self._too_big()
                if not self.finished:
                    events += self._body(bytes(event.data))
                    if eager and events and not self.finished:
                        self._unpumped = True
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
            elif isinstance(event, h11.EndOfMessage):
                if not self.finished:
                    events += self._body_end()
                if not self.finished:
                    events += self._finish_call(self.call.receive_eof())
            elif isinstance(event, h11.ConnectionClosed):
                if not self.finished:
                    events += self._finish_call(self.call.receive_eof())
                return events
            # InformationalResponse (1xx): nothing to do

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

    def _body(self, data: bytes) -> list[Event]:
        """Body bytes to the provider call, decoded first when the server compressed them."""
        if self._decoder is None:
            self.decoded_bytes += len(data)
            return self._finish_call(self.call.receive_data(data))
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


class TunnelError(Exception):
    """The HTTPS proxy refused or broke the CONNECT; the message names the proxy, not its credentials."""


class ConnectTunnel:
    """``CONNECT host:port`` to an HTTPS_PROXY; after it succeeds the socket is a raw pipe."""

    def __init__(self, target: Target, proxy: Proxy) -> None:
        self.target = target
        self.proxy = proxy
        self._h11 = h11.Connection(h11.CLIENT, max_incomplete_event_size=MAX_HEADER_BYTES)
        self.established = False

    def bytes_to_send(self) -> bytes:
        authority = f"{self.target.host}:{self.target.port}"
        headers = [("Host", authority), ("User-Agent", USER_AGENT)]
        if self.proxy.authorization:
            headers.append(("Proxy-Authorization", self.proxy.authorization))
        head = self._h11.send(h11.Request(method="CONNECT", target=authority, headers=headers))
        return (head or b"") + (self._h11.send(h11.EndOfMessage()) or b"")

    def receive_bytes(self, data: bytes | bytearray) -> bool:
        """Feed the proxy's answer; True once the tunnel is open. Raises `TunnelError`."""
        where = f"proxy {self.proxy.host}:{self.proxy.port}"
        try:
            self._h11.receive_data(bytes(data))
            while True:
                event = self._h11.next_event()
                if event is h11.NEED_DATA:
                    if not data:
                        raise TunnelError(f"{where} closed the connection during CONNECT")
                    return False
                if isinstance(event, h11.Response):
                    if not 200 <= event.status_code < 300:
                        raise TunnelError(
                            f"{where} refused CONNECT to {self.target.host}:{self.target.port}: "
                            f"HTTP {event.status_code} {event.reason.decode('latin-1')}"
                        )
                    continue
                if event is h11.PAUSED:
                    if self._h11.trailing_data[0]:
                        raise TunnelError(f"{where} sent data before the TLS handshake")
                    self.established = True
                    return True
                if isinstance(event, h11.ConnectionClosed):
                    raise TunnelError(f"{where} closed the connection during CONNECT")
        except h11.RemoteProtocolError as exc:
            raise TunnelError(f"{where} sent a malformed CONNECT response: {exc}") from None


def wire_headers(call: Call, now: datetime) -> list[tuple[str, str]]:
    """The headers to send, signed (Bedrock SigV4) at the moment of sending.

    Signing happens in the send path, not in the request builder: the
    signature covers the time, and a retry minutes later needs a fresh one.
    The provider module owns the signing; the shell only supplies the clock.
    """
    return list(call.sign(now).headers)


# -- the attempt loop, shared by both shells --------------------------------------
#
# A stream is a small program of I/O steps: connect, send, receive with a
# deadline, sleep before a retry, hand events to the caller, put the socket
# back or close it. `drive` is that program as a plain generator: it yields
# one step at a time and the shell answers with the step's result. All the
# decisions (which timer, when to retry, which Error, when a socket may be
# reused) are made here once; each shell is a ~40-line interpreter.


class Connect(NamedTuple):
    """Give me a connection to ``key`` (a pooled one unless ``fresh``), by ``deadline``.

    Answer: the `Exchange` the pooled socket last carried (reuse its HTTP
    state), None for a new socket, or an `Error` (use `connect_error`;
    `EXPIRED` when the deadline passed).
    """

    target: Target
    proxy: Proxy | None
    key: tuple[str, str, int, Proxy | None]
    fresh: bool
    deadline: float


class Send(NamedTuple):
    """Send ``data`` by ``deadline``. Answer: None, `EXPIRED`, or the exception."""

    data: bytes
    deadline: float


class Receive(NamedTuple):
    """Receive some bytes by ``deadline``. Answer: bytes (b"" at EOF), `EXPIRED`, or the exception."""

    deadline: float


class Sleep(NamedTuple):
    """Wait before the next attempt. Answer: None."""

    seconds: float


class Emit(NamedTuple):
    """Give these events to the caller. Answer: None."""

    events: list[Event]


class Release(NamedTuple):
    """Done with the socket: pool it with ``keep`` as its HTTP state, or close it when None."""

    keep: Exchange | None


Step = Connect | Send | Receive | Sleep | Emit | Release


class _Expired:
    def __repr__(self) -> str:
        return "EXPIRED"


#: The answer to a step whose deadline passed.
EXPIRED: Final = _Expired()


def _answer(exchange: Exchange, result: object, on_expiry: Error) -> list[Event]:
    if result is EXPIRED:
        return exchange.fail(on_expiry)
    if isinstance(result, BaseException):
        return exchange.connection_lost(result)
    if isinstance(result, bytes | bytearray):
        return exchange.receive_bytes(result, eager=True) if result else exchange.receive_eof()
    return []


def _drain_tail(
    exchange: Exchange, clock: Callable[[], float], deadline: float | None
) -> Generator[Step, object, None]:
    """Read what is left of the HTTP body after the terminal event, briefly and boundedly."""
    until = clock() + TAIL_GRACE
    if deadline is not None:
        until = min(until, deadline)
    while exchange.needs_tail:
        _answer(exchange, (yield Receive(until)), Error.network("tail"))


def drive(
    model: Model,
    context: Context,
    options: Options,
    *,
    environ: Mapping[str, str],
    clock: Callable[[], float],
    rand: Callable[[], float],
    log: logging.Logger,
    wall_clock: Callable[[], datetime],
) -> Generator[Step, object, None]:
    """The whole life of one `stream()` call, as steps for a shell to perform.

    ``clock`` is the shell's monotonic clock (deadlines are on it), ``rand``
    the jitter source, ``wall_clock`` the UTC time (request signing and
    Retry-After dates). Retries happen only before the caller saw an event
    (`FirstOutputGate`); a pooled socket the server had already closed is
    replaced without counting an attempt.
    """
    gate = FirstOutputGate(RetryPolicy.from_options(options))
    began = clock()
    deadline = began + options.total_timeout if options.total_timeout is not None else None
    debug = log.isEnabledFor(logging.DEBUG)
    fresh = False
    while True:
        if not fresh:
            gate.begin_attempt()
        call = open_call(model, context, options)
        target = parse_target(call.request.url)
        proxy = proxy_for(target.scheme, target.host, target.port, environ)
        log.info(
            "%s %s (attempt %d)", call.request.method, redact_url(call.request.url), gate.attempts
        )
        t0 = clock()
        limit = t0 + options.connect_timeout
        if deadline is not None:
            limit = min(limit, deadline)
        key = (target.scheme, target.host, target.port, proxy)
        conn = yield Connect(target, proxy, key, fresh, limit)
        fresh = False
        outcome: list[Event] | Retry
        if conn is EXPIRED or isinstance(conn, Error):
            error = (
                conn
                if isinstance(conn, Error)
                else connect_timeout_error(target, options.connect_timeout)
            )
            outcome = gate.feed(
                Exchange(call, model, options).fail(error),
                rand(),
                time_left=None if deadline is None else deadline - clock(),
            )
        else:
            log.debug("connected to %s:%d in %.3f s", target.host, target.port, clock() - t0)
            previous = conn if isinstance(conn, Exchange) else None
            sent_at = wall_clock()
            exchange = Exchange(
                call,
                model,
                options,
                headers=wire_headers(call, sent_at),
                deadline=deadline,
                reuse=previous,
                sent_at=sent_at,
            )
            until, on_expiry = exchange.timer(clock())
            events = _answer(exchange, (yield Send(exchange.bytes_to_send(), until)), on_expiry)
            logged_status = False
            while True:
                if not events and not exchange.finished:
                    events = exchange.pump()  # what the last read still holds first
                if not events and not exchange.finished:
                    until, on_expiry = exchange.timer(clock())
                    events = _answer(exchange, (yield Receive(until)), on_expiry)
                if exchange.stale_keep_alive:
                    log.debug("pooled connection was closed by the server; reconnecting")
                    yield Release(None)
                    fresh = True
                    break
                if not logged_status and exchange.status is not None:
                    logged_status = True
                    log.info(
                        "HTTP %d from %s after %.3f s", exchange.status, target.host, clock() - t0
                    )
                outcome = gate.feed(
                    events, rand(), time_left=None if deadline is None else deadline - clock()
                )
                events = []
                if isinstance(outcome, Retry):
                    yield Release(exchange if exchange.reusable else None)
                    break
                if debug:
                    for event in outcome:
                        log.debug("event %r", event)
                if exchange.finished:
                    # the terminal event waits for the end of the HTTP body, so a
                    # caller who stops reading at Done still leaves a reusable socket
                    if outcome[:-1]:
                        yield Emit(outcome[:-1])
                    yield from _drain_tail(exchange, clock, deadline)
                    log.info(
                        "stream finished after %.3f s (%d body bytes, %d attempt(s))",
                        clock() - began,
                        exchange.body_bytes,
                        gate.attempts,
                    )
                    yield Release(exchange if exchange.reusable else None)
                    if outcome[-1:]:
                        yield Emit(outcome[-1:])
                    return
                if outcome:
                    yield Emit(outcome)
            if fresh:
                continue
        if isinstance(outcome, Retry):
            log.warning(
                "attempt %d failed (%s); retrying in %.2f s",
                gate.attempts,
                outcome.error.message,
                outcome.delay,
            )
            yield Sleep(outcome.delay)
            continue
        if outcome:
            yield Emit(outcome)
        return


# -- what both shells' clients share: configuration, the pool, the step loop -----

PoolKey = tuple[str, str, int, Proxy | None]


def _utc_now() -> datetime:
    """The shells' wall clock (`ClientBase` is their shared half; `drive` takes it)."""
    return datetime.now(UTC)


class PooledConnection:
    """A shell's socket wrapper: what the pool needs to know about it."""

    __slots__ = ("key", "last")

    def __init__(self, key: PoolKey) -> None:
        self.key = key
        #: the exchange it last carried, handed to the next one on reuse
        self.last: Exchange | None = None


ConnT = TypeVar("ConnT", bound=PooledConnection)


class ClientBase(Generic[ConnT], abc.ABC):
    """Configuration, a keep-alive pool, and the loop that performs `drive`'s steps.

    ``ssl_context`` overrides the default (verification on, system CAs);
    ``environ`` is where API keys and HTTPS_PROXY/NO_PROXY are read (default
    `os.environ`); at most ``max_idle_per_host`` idle connections are kept per
    host. ``wall_clock`` gives the UTC time for signing and Retry-After dates
    (default ``datetime.now(UTC)``). Use ``async with Client() as client`` (or
    `aclose`) so idle sockets are closed with it.

    A shell subclasses this with its I/O primitives only (open, send,
    receive with a deadline, sleep, close, its clock). Nothing here imports
    trio or asyncio, and both shells run this same loop.
    """

    def __init__(
        self,
        *,
        ssl_context: ssl.SSLContext | None = None,
        environ: Mapping[str, str] | None = None,
        max_idle_per_host: int = 8,
        logger: logging.Logger | None = None,
        rand: Callable[[], float] | None = None,
        wall_clock: Callable[[], datetime] | None = None,
    ) -> None:
        self._ssl_context = ssl_context
        self.environ: Mapping[str, str] = os.environ if environ is None else environ
        self.max_idle_per_host = max_idle_per_host
        self.log = logger or logging.getLogger("streamfn")
        self._rand = rand or random.random
        self._wall_clock = wall_clock or _utc_now
        self._idle: dict[PoolKey, list[ConnT]] = {}
        #: models found to need the Responses API (see `upgrade_to_responses`)
        self.responses_upgraded: set[tuple[str, str, str]] = set()

    @property
    def ssl_context(self) -> ssl.SSLContext:
        if self._ssl_context is None:
            self._ssl_context = ssl.create_default_context()
        return self._ssl_context

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close every idle connection."""
        idle, self._idle = self._idle, {}
        for conns in idle.values():
            for conn in conns:
                await self._close(conn)

    @property
    def idle_connections(self) -> int:
        return sum(len(c) for c in self._idle.values())

    def stream(
        self, model: Model, context: Context, options: Options | None = None
    ) -> AbstractAsyncContextManager[AsyncIterator[Event]]:
        """``async with client.stream(m, ctx) as events: async for ev in events: ...``

        Raises `MissingCredentials` on entry, before connecting, when no key
        is configured. Leaving the block closes the connection unless the
        response was read to its end.
        """
        return self._stream(model, context, options or Options())

    async def complete(
        self,
        model: Model,
        context: Context,
        options: Options | None = None,
        *,
        raise_on_error: bool = True,
    ) -> AssistantMessage:
        """The whole answer as one message.

        A stream that ends in an `Error` raises `CompletionError` (its ``error``
        is the event, its ``message`` the partial answer); with
        ``raise_on_error=False`` the message is returned with ``error_message`` set.
        """
        from ..completion import finish_completion

        async with self.stream(model, context, options) as events:
            collected = [event async for event in events]
        return finish_completion(collected, raise_on_error=raise_on_error, options=options)

    # -- the I/O a shell provides ------------------------------------------------
    @abc.abstractmethod
    def _clock(self) -> Callable[[], float]:
        """The event loop's clock, which every deadline is measured on."""

    @abc.abstractmethod
    async def _open(self, step: Connect) -> ConnT | Error | object:
        """A new connection, a connect `Error`, or `EXPIRED`."""

    @abc.abstractmethod
    async def _send(self, conn: ConnT, data: bytes, deadline: float) -> object:
        """None when sent, the exception when the socket failed, or `EXPIRED`."""

    @abc.abstractmethod
    async def _receive(self, conn: ConnT, deadline: float) -> object:
        """Bytes (empty at EOF), the exception when the socket failed, or `EXPIRED`."""

    @abc.abstractmethod
    async def _sleep(self, seconds: float) -> None: ...

    @abc.abstractmethod
    async def _close(self, conn: ConnT) -> None:
        """Close at once, without waiting for the peer (cancellation, errors, abandon)."""

    @abc.abstractmethod
    async def _readable(self, conn: ConnT) -> bool:
        """Whether bytes or an end of stream wait to be read, without waiting for any.

        A zero-timeout readiness check (poll on the socket, or the event loop's
        own buffer); it may consume what it finds, as the connection is then
        closed anyway.
        """

    def _usable(self, conn: ConnT) -> bool:
        """Whether an idle connection may serve another request (shell-specific rules)."""
        return True

    # -- shared --------------------------------------------------------------------
    @asynccontextmanager
    async def _stream(
        self, model: Model, context: Context, options: Options
    ) -> AsyncIterator[AsyncIterator[Event]]:
        if isinstance(model, FallbackModel):
            check_chain(model, options, self.environ)
            events = fall_back(self._open_events, model, context, options)
        else:
            events = self._open_events(model, context, options)
        try:
            yield events
        finally:
            await events.aclose()

    def _open_events(
        self, model: Model, context: Context, options: Options
    ) -> AsyncGenerator[Event, None]:
        """One model's stream, with the upgrades and transforms it asks for.

        Raises `MissingCredentials` at once (before any connection) without a key.
        """
        options = with_credentials(model, options, self.environ)
        events = upgrade_to_responses(
            self._traced_events, self.responses_upgraded, model, context, options
        )
        return with_text_tool_calls(events, model, context, options)

    def _traced_events(
        self, model: Model, context: Context, options: Options
    ) -> AsyncGenerator[Event, None]:
        """One call to one model, in an OpenTelemetry span when OpenTelemetry is there."""
        return traced(self._events(model, context, options), model, options, self._clock())

    async def _events(
        self, model: Model, context: Context, options: Options
    ) -> AsyncGenerator[Event, None]:
        """Perform the steps of `drive`; the connection in hand is closed on any exit."""
        steps = drive(
            model,
            context,
            options,
            environ=self.environ,
            clock=self._clock(),
            rand=self._rand,
            log=self.log,
            wall_clock=self._wall_clock,
        )
        conn: ConnT | None = None
        answer: object = None
        try:
            while True:
                try:
                    step = steps.send(answer)
                except StopIteration:
                    return
                answer = None
                if isinstance(step, Emit):
                    for event in step.events:
                        yield event
                elif isinstance(step, Receive):
                    assert conn is not None
                    answer = await self._receive(conn, step.deadline)
                elif isinstance(step, Send):
                    assert conn is not None
                    answer = await self._send(conn, step.data, step.deadline)
                elif isinstance(step, Connect):
                    conn = None if step.fresh else await self._take_idle(step.key)
                    if conn is not None:
                        answer = conn.last
                    else:
                        opened = await self._open(step)
                        if isinstance(opened, PooledConnection):
                            conn = cast(ConnT, opened)
                        else:
                            answer = opened
                elif isinstance(step, Release):
                    assert conn is not None
                    held, conn = conn, None
                    await self._release(held, step.keep)
                elif isinstance(step, Sleep):
                    await self._sleep(step.seconds)
        finally:
            steps.close()
            if conn is not None:
                await self._close(conn)

    async def _take_idle(self, key: PoolKey) -> ConnT | None:
        """An idle connection that is still idle: nothing arrived on it since it was pooled.

        A server may write after a response (a second response, a ``408`` and a
        close, a TLS alert) or close the socket while it sits in the pool; those
        bytes would otherwise be read as the next request's answer. Such a
        connection is closed and the next one tried, as httpcore and urllib3
        check readability before reusing a socket.
        """
        conns = self._idle.get(key)
        while conns:
            conn = conns.pop()
            last = conn.last
            if (
                last is not None
                and last.reusable
                and self._usable(conn)
                and not await self._readable(conn)
            ):
                return conn
            await self._close(conn)
        return None

    async def _release(self, conn: ConnT, keep: Exchange | None) -> None:
        """Back to the pool after a complete exchange; closed at once otherwise."""
        conns = self._idle.setdefault(conn.key, [])
        if keep is not None and len(conns) < self.max_idle_per_host:
            conn.last = keep
            conns.append(conn)
        else:
            await self._close(conn)
