"""What every provider state machine shares: the request, the call lifecycle,
block bookkeeping, and the guarantee that no exception escapes.

A provider module subclasses `SSECall`, `NDJSONCall` or `FramedCall` and
implements one method that turns one decoded wire unit into emitter calls.
The base class handles the HTTP status (bounded error body -> one classified
`Error`), content-type mismatches, decoder caps, content caps, early end of
stream, stickiness after the terminal event, and converts any exception the
provider code raises on malformed data into ``Error(kind=protocol)``.
"""

from __future__ import annotations

import abc
import logging
from collections.abc import Callable, Hashable, Iterable, Mapping
from datetime import datetime
from typing import Any, ClassVar, Final
from urllib.parse import urlsplit

import msgspec

from ..classify import classify_http_error
from ..events import (
    Cost,
    Done,
    Error,
    Event,
    OpaqueBlock,
    Start,
    StopReason,
    TextDelta,
    TextEnd,
    TextStart,
    ThinkingDelta,
    ThinkingEnd,
    ThinkingStart,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    Usage,
)
from ..messages import Context
from ..models import Model, compute_cost
from ..options import Options
from ..redact import redact_url
from ..wire.eventstream import EventStreamError
from ..wire.ndjson import NDJSONDecoder, NDJSONError
from ..wire.sse import ServerSentEvent, SSEDecoder, SSEError

__all__ = [
    "SECRET_HEADERS",
    "Emitter",
    "HTTPRequest",
    "NDJSONCall",
    "ProviderCall",
    "SSECall",
    "bearer",
    "json_request",
    "redact_headers",
    "request_headers",
]

log = logging.getLogger("streamfn")

#: Header names whose values are credentials; never logged, never in a repr.
SECRET_HEADERS: Final = frozenset(
    {
        "authorization",
        "x-api-key",
        "api-key",
        "x-goog-api-key",
        "x-amz-security-token",
        "proxy-authorization",
        "cookie",
    }
)


def redact_headers(headers: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    return [(k, "***" if k.lower() in SECRET_HEADERS else v) for k, v in headers]


class HTTPRequest(msgspec.Struct, frozen=True, kw_only=True):
    """What the shell must send. Built by the provider, never touched by the shell."""

    method: str
    url: str
    headers: list[tuple[str, str]]
    body: bytes

    def __repr__(self) -> str:
        return (
            f"HTTPRequest(method={self.method!r}, url={redact_url(self.url)!r}, "
            f"headers={redact_headers(self.headers)!r}, body=<{len(self.body)} bytes>)"
        )


_JSON_ENCODER: Final = msgspec.json.Encoder()


def bearer(api_key: str | None) -> tuple[str, str] | None:
    """The ``Authorization: Bearer`` header for ``api_key``; None without a key."""
    return ("authorization", f"Bearer {api_key}") if api_key else None


def request_headers(
    model: Model, options: Options, *, accept: str, auth: tuple[str, str] | None = None
) -> list[tuple[str, str]]:
    """JSON-in, stream-out headers plus the credential header, then the caller's own.

    ``model.headers`` then ``options.headers`` replace any header of the same
    name (case-insensitively): that is how beta flags, API versions and
    gateways' extra headers get in without a provider knowing about them.
    """
    headers = [("content-type", "application/json"), ("accept", accept)]
    if auth is not None:
        headers.append(auth)
    for extra in (model.headers, options.headers):
        if extra:
            names = {k.lower() for k in extra}
            headers = [(k, v) for k, v in headers if k.lower() not in names]
            headers.extend(extra.items())
    return headers


def api_root(base: str, version: str, *, only_bare: bool = False) -> str:
    """The base URL with the API's ``version`` path, added when the caller left it out.

    One convention for every provider: a base URL may be the server's root
    (``http://localhost:8000``) or the API root (``http://localhost:8000/v1``);
    a version already there is never doubled. ``only_bare`` is for the
    OpenAI-compatible family, whose version sits anywhere in a gateway's path
    (``/openai/v1``, ``/api/paas/v4``): it is added only to a URL with no path.
    """
    base = base.rstrip("/")
    if base.endswith(version):
        return base
    if only_bare and urlsplit(base).path:
        return base
    return base + version


def merge_extra_body(body: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    """Deep-merge ``extra`` into ``body``: objects merge key by key, lists are extended
    (so ``{"tools": [server_tool]}`` adds to the function tools), a ``None`` removes
    the key, anything else replaces it."""
    for key, value in extra.items():
        current = body.get(key)
        if value is None:
            body.pop(key, None)
        elif isinstance(value, dict) and isinstance(current, dict):
            body[key] = merge_extra_body(dict(current), value)
        elif isinstance(value, list) and isinstance(current, list):
            body[key] = [*current, *value]
        else:
            body[key] = value
    return body


def json_request(
    url: str, headers: list[tuple[str, str]], body: dict[str, Any], options: Options
) -> HTTPRequest:
    """A POST of ``body`` as JSON, with ``options.extra_body`` deep-merged over it last."""
    if options.extra_body:
        merge_extra_body(body, options.extra_body)
    return HTTPRequest(method="POST", url=url, headers=headers, body=_JSON_ENCODER.encode(body))


class _Block(msgspec.Struct, gc=False):
    kind: str  # "text" | "thinking" | "tool"
    index: int


class Emitter:
    """Turns a provider's keyed block updates into a valid event sequence.

    Providers name their blocks however the wire does (Anthropic's ``index``,
    OpenAI's tool-call ``index``, a constant for "the text") and the emitter
    assigns content indices in order of first appearance, opens and closes
    blocks, and counts content bytes against the cap. It never emits anything
    after a terminal event.
    """

    def __init__(
        self,
        *,
        max_content_bytes: int | None = None,
        before_first: Callable[[], Event] | None = None,
    ) -> None:
        self.events: list[Event] = []
        self.finished = False
        #: makes the event that must precede all others (`Start`), at the moment
        #: the first one is emitted: that moment is a fixed point in the byte
        #: stream, so what Start carries does not depend on the chunking.
        self._before_first = before_first
        self._open: dict[Hashable, _Block] = {}
        self._next_index = 0
        self._content_bytes = 0
        self._max_content = max_content_bytes

    def _push(self, event: Event) -> None:
        if self._before_first is not None:
            self.events.append(self._before_first())
            self._before_first = None
        self.events.append(event)

    def start_before_first(self, make: Callable[[], Event]) -> None:
        """Emit ``make()`` right before the next event (once)."""
        self._before_first = make

    def drain(self) -> list[Event]:
        out, self.events = self.events, []
        return out

    # -- blocks ---------------------------------------------------------
    def is_open(self, key: Hashable) -> bool:
        return key in self._open

    def open_kind(self, key: Hashable) -> str | None:
        block = self._open.get(key)
        return block.kind if block else None

    @property
    def open_keys(self) -> list[Hashable]:
        return list(self._open)

    def _open_block(self, key: Hashable, kind: str) -> int:
        existing = self._open.get(key)
        if existing is not None:
            if existing.kind == kind:
                return existing.index
            self.end(key)
        index = self._next_index
        self._next_index += 1
        self._open[key] = _Block(kind, index)
        return index

    def _over_limit(self) -> None:
        """The content so far (counted inline by each delta) passed the cap."""
        self.error(
            Error.limit(
                f"response content exceeded max_content_bytes={self._max_content}; "
                "raise Options.max_content_bytes or ask for less"
            )
        )

    # text() and thinking() are the hot path: one dict lookup per delta. A
    # finished emitter has no open blocks (done/error clear them), so a block
    # found open means the stream is live.
    def text(self, key: Hashable, delta: str) -> None:
        block = self._open.get(key)
        if block is not None and block.kind == "text":
            index = block.index
        else:
            opened = self._start_stream(key, "text", TextStart)
            if opened is None:
                return
            index = opened
        if delta:
            self._content_bytes += len(delta)
            if self._max_content is None or self._content_bytes <= self._max_content:
                self.events.append(TextDelta(index, delta))
            else:
                self._over_limit()

    def thinking(self, key: Hashable, delta: str) -> None:
        block = self._open.get(key)
        if block is not None and block.kind == "thinking":
            index = block.index
        else:
            opened = self._start_stream(key, "thinking", ThinkingStart)
            if opened is None:
                return
            index = opened
        if delta:
            self._content_bytes += len(delta)
            if self._max_content is None or self._content_bytes <= self._max_content:
                self.events.append(ThinkingDelta(index, delta))
            else:
                self._over_limit()

    def _start_stream(
        self, key: Hashable, kind: str, start: type[TextStart] | type[ThinkingStart]
    ) -> int | None:
        """Open a text or thinking block (closing whatever ``key`` had open)."""
        if self.finished:
            return None
        index = self._open_block(key, kind)
        self._push(start(index))
        return index

    def tool_start(self, key: Hashable, id: str, name: str) -> None:
        if self.finished:
            return
        if key in self._open:
            self.end(key)
        index = self._open_block(key, "tool")
        self._push(ToolCallStart(index, id, name))

    def tool_delta(self, key: Hashable, delta: str) -> None:
        if self.finished or not delta:
            return
        block = self._open.get(key)
        if block is None or block.kind != "tool":
            raise ValueError(f"tool-call arguments for a call that never started ({key!r})")
        self._content_bytes += len(delta)
        if self._max_content is None or self._content_bytes <= self._max_content:
            self.events.append(ToolCallDelta(block.index, delta))
        else:
            self._over_limit()

    def end(self, key: Hashable, *, signature: str | None = None, redacted: bool = False) -> None:
        """Close a block if it is open (closing twice is harmless)."""
        if self.finished:
            return
        block = self._open.pop(key, None)
        if block is None:
            return
        if block.kind == "text":
            self.events.append(TextEnd(block.index, signature))
        elif block.kind == "thinking":
            self.events.append(ThinkingEnd(block.index, signature, redacted))
        else:
            self.events.append(ToolCallEnd(block.index, signature))

    def opaque(self, provider: str, block_type: str, json: str) -> None:
        if self.finished:
            return
        index = self._next_index
        self._next_index += 1
        self._push(OpaqueBlock(index, provider, block_type, json))

    def close_all(self) -> None:
        for key in list(self._open):
            self.end(key)

    # -- terminal ---------------------------------------------------------
    def done(self, stop_reason: StopReason, usage: Usage, cost: Cost) -> None:
        if self.finished:
            return
        self.close_all()
        self._push(Done(stop_reason=stop_reason, usage=usage, cost=cost))
        self.finished = True
        self._open.clear()

    def error(self, error: Error) -> None:
        if self.finished:
            return
        self._push(error)
        self.finished = True
        self._open.clear()


_AWAITING: Final = "awaiting_response"
_STREAMING: Final = "streaming"
_ERROR_BODY: Final = "error_body"
_DONE: Final = "done"


class ProviderCall(abc.ABC):
    """The sans-I/O call object: ``request`` out, response bytes in, events out.

    Contract (the same for every provider): ``receive_response`` once, then
    ``receive_data`` any number of times, then ``receive_eof``; each returns a
    list of events. Exactly one `Start` and one terminal event come out over
    the whole call, and nothing after the terminal one. No method raises on
    any input from the wire.
    """

    #: wire format name (`Model.api`)
    api: ClassVar[str] = ""
    #: content types a 2xx body may have; anything else is read as an error body
    content_types: ClassVar[tuple[str, ...]] = ()
    #: put before a wire decoder's own reason in the `Error` it ends the call with
    decoder_error_prefix: ClassVar[str] = ""

    def __init__(
        self, model: Model, context: Context, options: Options, request: HTTPRequest
    ) -> None:
        self.model = model
        self.context = context
        self.options = options
        self.request = request
        self.emit = Emitter(max_content_bytes=options.max_content_bytes)
        self.usage = Usage()
        self.response_id: str | None = None
        self._state = _AWAITING
        self._status = 0
        self._headers: list[tuple[str, str]] = []
        self._error_body = bytearray()
        self._wrong_type: str | None = None
        #: the body stopped inside an event (set by the SSE base at end of body)
        self.cut_inside_event = False

    # -- public contract --------------------------------------------------
    @property
    def finished(self) -> bool:
        return self._state == _DONE or self.emit.finished

    def receive_response(
        self, status: int, headers: Iterable[tuple[str, str]] | Mapping[str, str]
    ) -> list[Event]:
        if self._state != _AWAITING:
            return []
        items = list(headers.items() if isinstance(headers, Mapping) else headers)
        self._status = status
        self._headers = [(str(k), str(v)) for k, v in items]
        ctype = self.header("content-type") or ""
        if not 200 <= status < 300:
            self._state = _ERROR_BODY
            return []
        if self.content_types and ctype and not _matches(ctype, self.content_types):
            self._wrong_type = ctype
            self._state = _ERROR_BODY
            return []
        self._state = _STREAMING
        # Start goes out with the first events the body yields, not now: by then
        # the provider has read its response id from the body (message_start,
        # response.created, a chunk's id), so Start and the folded message carry it.
        self.emit.start_before_first(self._start_event)
        return []

    def receive_data(self, data: bytes) -> list[Event]:
        if self._state == _ERROR_BODY:
            room = self.options.max_error_body_bytes - len(self._error_body)
            if room > 0:
                self._error_body += data[:room]
            return []
        if self._state != _STREAMING or self.emit.finished or not data:
            return []
        self._guard(self._feed, data)
        return self._drain()

    def receive_eof(self) -> list[Event]:
        if self._state == _ERROR_BODY:
            self._state = _DONE
            return [self._start_event(), self._http_error()]
        if self._state == _AWAITING:
            self._state = _DONE
            return [
                self._start_event(),
                Error.network("connection closed before a response arrived"),
            ]
        if self._state != _STREAMING:
            return []
        if not self.emit.finished:
            self._guard(self._eof)
        if not self.emit.finished:
            where = " (inside an event)" if self.cut_inside_event else ""
            self.emit.error(
                Error.network(f"stream ended early{where}", usage=self._usage_or_none())
            )
        return self._drain()

    def abort(self, message: str = "aborted by the caller") -> list[Event]:
        """The caller gave up: end the stream with ``stop_reason=aborted``."""
        if self._state == _DONE or self.emit.finished:
            return []
        if self._state == _AWAITING:
            self.emit.start_before_first(self._start_event)
        self._state = _STREAMING
        self.emit.error(Error.aborted(message, usage=self._usage_or_none()))
        return self._drain()

    def sign(self, timestamp: datetime) -> HTTPRequest:
        """The request to send at ``timestamp``. Most providers need no signature;
        Bedrock overrides this with SigV4, which covers the time of sending."""
        return self.request

    def header(self, name: str) -> str | None:
        lname = name.lower()
        for key, value in self._headers:
            if key.lower() == lname:
                return value
        return None

    @property
    def status(self) -> int:
        return self._status

    # -- for subclasses ---------------------------------------------------
    @abc.abstractmethod
    def _feed(self, data: bytes) -> None:
        """Decode bytes and drive the emitter."""

    @abc.abstractmethod
    def _eof(self) -> None:
        """Flush the decoder; emit the terminal event if the wire said it is done."""

    def finish(self, stop_reason: StopReason) -> None:
        """Emit `Done` with the usage gathered so far, priced with the model."""
        self.emit.done(stop_reason, self.usage, compute_cost(self.model, self.usage))

    def fail(self, error: Error) -> None:
        if error.usage is None and self._usage_or_none() is not None:
            error = msgspec.structs.replace(error, usage=self.usage)
        self.emit.error(error)

    def _start_event(self) -> Start:
        return Start(
            api=self.api,
            provider=self.model.provider,
            model=self.model.id,
            response_id=self.response_id,
        )

    # -- internals ----------------------------------------------------------
    def _usage_or_none(self) -> Usage | None:
        return self.usage if self.usage.total else None

    def _drain(self) -> list[Event]:
        events = self.emit.drain()
        if self.emit.finished:
            self._state = _DONE
        return events

    def _guard(self, fn: Any, *args: Any) -> None:
        try:
            fn(*args)
        except (SSEError, NDJSONError, EventStreamError) as exc:
            reason = self.decoder_error_prefix + exc.reason
            self.fail(Error.limit(reason) if exc.limit else Error.protocol(reason))
        except Exception as exc:  # malformed provider data must not escape
            log.warning("malformed %s stream: %s: %s", self.api, type(exc).__name__, exc)
            self.fail(
                Error.protocol(
                    f"malformed {self.api} stream from {self.model.provider}: "
                    f"{type(exc).__name__}: {exc}"
                )
            )

    def _http_error(self) -> Error:
        body = bytes(self._error_body)
        if self._wrong_type is not None:
            snippet = body[:200].decode("utf-8", "replace")
            if 200 <= self._status < 300:
                return Error.protocol(
                    f"{self.model.provider} answered {self._status} with content type "
                    f"{self._wrong_type!r}, expected {' or '.join(self.content_types)}: {snippet}"
                )
        return classify_http_error(self._status, self._headers, body, provider=self.model.provider)


def _matches(ctype: str, accepted: tuple[str, ...]) -> bool:
    base = ctype.split(";", 1)[0].strip().lower()
    return base in accepted


class SSECall(ProviderCall):
    """A provider whose body is ``text/event-stream``."""

    content_types = ("text/event-stream",)

    def __init__(
        self, model: Model, context: Context, options: Options, request: HTTPRequest
    ) -> None:
        super().__init__(model, context, options, request)
        self.decoder = SSEDecoder(
            max_line_bytes=options.max_line_bytes, max_event_bytes=options.max_event_bytes
        )

    @abc.abstractmethod
    def on_event(self, event: ServerSentEvent) -> None:
        """Handle one decoded SSE event."""

    def on_end(self) -> None:
        """The body ended; providers with an implicit terminal marker finish here."""

    #: True in providers that override `on_data`: their bytes take the fast path
    raw_data: ClassVar[bool] = False

    def on_data(self, data: bytes, event_type: bytes) -> bool:
        """Handle one event's raw data (`SSEDecoder.feed_to`); True once finished.

        The fast path for providers that parse the data themselves (no
        `ServerSentEvent`, no text copy); set ``raw_data`` with it. It must act
        exactly as `on_event` on the same event: the chunking tests feed both
        (the end of a body always goes through `on_event`).
        """
        raise NotImplementedError

    def _feed(self, data: bytes) -> None:
        if self.raw_data:
            self.decoder.feed_to(data, self.on_data)
            return
        for event in self.decoder.feed(data):
            if isinstance(event, ServerSentEvent):
                self.on_event(event)
                if self.emit.finished:
                    return

    def _eof(self) -> None:
        for event in self.decoder.end():
            if isinstance(event, ServerSentEvent):
                try:
                    self.on_event(event)
                except Exception as exc:
                    # The decoder hands over an unterminated last event at EOF (a
                    # documented leniency for recordings that end without the blank
                    # line). If that event does not parse, the body was cut inside
                    # it: a dropped connection, not bad data. Drop it and let
                    # `on_end` decide, as for any body without its terminal marker.
                    log.debug("%s: body ended inside an event: %s", self.api, exc)
                    self.cut_inside_event = True
                    break
                if self.emit.finished:
                    return
        self.on_end()


class NDJSONCall(ProviderCall):
    """A provider whose body is newline-delimited JSON (Ollama)."""

    content_types = ("application/x-ndjson", "application/json", "application/jsonl")

    def __init__(
        self, model: Model, context: Context, options: Options, request: HTTPRequest
    ) -> None:
        super().__init__(model, context, options, request)
        self.decoder = NDJSONDecoder(max_line_bytes=options.max_event_bytes)

    @abc.abstractmethod
    def on_line(self, line: bytes) -> None:
        """Handle one JSON line."""

    def on_end(self) -> None:
        """The body ended without the provider's terminal line."""

    def _feed(self, data: bytes) -> None:
        for line in self.decoder.feed(data):
            self.on_line(line)
            if self.emit.finished:
                return

    def _eof(self) -> None:
        for line in self.decoder.end():
            self.on_line(line)
            if self.emit.finished:
                return
        self.on_end()
