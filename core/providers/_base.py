"""What every provider state machine shares: the call lifecycle, block
bookkeeping, one feed loop over any wire decoder, and the guarantee that no
exception escapes.

A provider module subclasses `SSECall`, `NDJSONCall` or `FramedCall` (any
other `~streamfn.core.wire._decoder.Decoder`) and implements one method that
turns one decoded frame into emitter calls. The base class handles the HTTP
status (bounded error body -> one classified `Error`), content-type
mismatches, decoder caps, content caps, early end of stream, stickiness after
the terminal event, and converts any exception the provider code raises on
malformed data into ``Error(kind=protocol)``. Request building lives in
`_request` (re-exported here for the provider modules).
"""

from __future__ import annotations

import abc
import logging
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Any, ClassVar, Final, Generic, TypeVar

import msgspec

from .._classify import classify_http_error
from .._emitter import Emitter
from .._errors import DecodeError
from .._events import (
    Error,
    Event,
    Start,
    StopReason,
    Usage,
)
from .._messages import Context
from .._options import Options
from .._rate_limits import read_rate_limits, read_request_id
from .._redact import request_secrets, scrub, shorten
from ..catalogue._models import Model, compute_cost
from ..wire._decoder import Decoder
from ..wire._ndjson import NDJSONDecoder
from ..wire._sse import ServerSentEvent, SSEComment, SSEDecoder
from ._request import (
    SECRET_HEADERS,
    HTTPRequest,
    api_root,
    bearer,
    json_request,
    redact_headers,
    request_headers,
)

__all__ = [
    "SECRET_HEADERS",
    "Emitter",
    "FramedCall",
    "HTTPRequest",
    "NDJSONCall",
    "ProviderCall",
    "SSECall",
    "api_root",
    "bearer",
    "json_request",
    "redact_headers",
    "request_headers",
    "sse_decoder",
]

log = logging.getLogger("streamfn")

FrameT = TypeVar("FrameT")
_C = TypeVar("_C")

# The call classes below are compiled in an opted-in build (pyproject.toml's
# [tool.streamfn.compiled]) and subclassed by providers that are not (plugins, the
# other dialects): mypyc allows that only when asked, by this decorator.
try:  # installed with mypy: what mypyc reads when it compiles this module
    from mypy_extensions import mypyc_attr
except ImportError:  # a plain install: the decorator does nothing

    def mypyc_attr(*attrs: str, **kwattrs: object) -> Callable[[_C], _C]:
        return lambda cls: cls


_AWAITING: Final = "awaiting_response"
_STREAMING: Final = "streaming"
_ERROR_BODY: Final = "error_body"
#: how much of a 2xx body of the wrong content type its `Error` shows
_SNIPPET_CHARS: Final = 200
_DONE: Final = "done"


@mypyc_attr(allow_interpreted_subclasses=True)
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
        #: the model the response names (`Start.response_model`), where the wire says
        self.response_model: str | None = None
        self._state = _AWAITING
        self._status = 0
        self._headers: list[tuple[str, str]] = []
        self._error_body = bytearray()
        #: the error body went past its cap (what was kept ends where the cap cut it)
        self._error_body_cut = False
        self._wrong_type: str | None = None
        #: the body stopped inside an event (set by `FramedCall` at end of body)
        self.cut_inside_event = False
        #: what `receive_data` hands a read to: `_feed`, or one bound decoder step
        self._step: Callable[[bytes], object] = self._feed

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
        emit = self.emit
        if self._state is not _STREAMING or emit.finished or not data:
            return self._not_streamed(data)
        try:  # _guard, inlined: this runs once per read
            self._step(data)
        except Exception as exc:
            self._fault(exc)
        events = emit.events  # emit.drain, inlined
        emit.events = []
        if emit.finished:
            self._state = _DONE
        return events

    def _not_streamed(self, data: bytes) -> list[Event]:
        """Bytes `receive_data` does not decode: an error body's (kept up to its cap)."""
        if self._state is _ERROR_BODY:
            room = self.options.max_error_body_bytes - len(self._error_body)
            if room > 0:
                self._error_body += data[:room]
            self._error_body_cut |= len(data) > room
        return []

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

    def resume(self, request: HTTPRequest) -> ProviderCall:
        """This call once more, reading the rest of its response from ``request``.

        For a provider that continues one response on a new request (OpenAI
        Responses background mode, see `resume_request` in `streamfn.core`): the HTTP state
        starts afresh, the stream state (blocks, indexes, usage, the provider's
        own bookkeeping) goes on, and an `Error` the cut left is withdrawn.
        """
        self.request = request
        self._state = _AWAITING
        self._status = 0
        self._headers = []
        self._error_body = bytearray()
        self._error_body_cut = False
        self._wrong_type = None
        self.cut_inside_event = False
        self.emit.reopen()
        return self

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

    def finish(self, stop_reason: StopReason, *, paused: bool = False) -> None:
        """Emit `Done` with the usage gathered so far, priced with the model (``paused``:
        the provider paused the turn, see `Done.paused`).

        A turn that ended normally with tool calls is `StopReason.TOOL_USE` whatever
        word the wire used for its end: OpenAI-compatible servers (vLLM, llama.cpp,
        several hosted ones) say ``stop``, Gemini has no word for it, and an agent loop
        that branches on ``tool_use`` must not stop there. The calls are whole (`Done`
        closes them); a ``length`` stop may have cut them and stays ``length``."""
        if stop_reason is StopReason.STOP and not paused and self.emit.tool_calls:
            stop_reason = StopReason.TOOL_USE
        self.emit.done(stop_reason, self.usage, compute_cost(self.model, self.usage), paused=paused)

    def fail(self, error: Error) -> None:
        self.emit.error(self.reported(error))

    def reported(self, error: Error) -> Error:
        """``error`` carrying the usage this call reported before it, where it carries
        none: a request cut after its first events was billed for them (the shell's
        own errors, a dropped connection or a timer, end the stream this way too)."""
        if error.usage is None and self._usage_or_none() is not None:
            return msgspec.structs.replace(error, usage=self.usage)
        return error

    def _start_event(self) -> Start:
        headers = self._headers  # the request id and rate limits come with the status
        return Start(
            api=self.api,
            provider=self.model.provider,
            model=self.model.id,
            response_id=self.response_id,
            response_model=self.response_model,
            request_id=read_request_id(headers) if headers else None,
            rate_limits=read_rate_limits(headers) if headers else None,
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
        except Exception as exc:
            self._fault(exc)

    def _fault(self, exc: Exception) -> None:
        """A decoder fault or malformed provider data: the stream's terminal error."""
        if isinstance(exc, DecodeError):
            reason = self.decoder_error_prefix + exc.reason
            self.fail(Error.limit(reason) if exc.limit else Error.protocol(reason))
            return
        # malformed provider data must not escape
        log.warning("malformed %s stream: %s: %s", self.api, type(exc).__name__, exc)
        self.fail(
            Error.protocol(
                f"malformed {self.api} stream from {self.model.provider}: "
                f"{type(exc).__name__}: {exc}"
            )
        )

    def _http_error(self) -> Error:
        body = bytes(self._error_body)
        secrets = request_secrets(self.model, self.options)
        if self._wrong_type is not None:
            text = scrub(body.decode("utf-8", "replace"), secrets)
            snippet = shorten(text, _SNIPPET_CHARS, cut=self._error_body_cut)
            if 200 <= self._status < 300:
                return Error.protocol(
                    f"{self.model.provider} answered {self._status} with content type "
                    f"{self._wrong_type!r}, expected {' or '.join(self.content_types)}: {snippet}"
                )
        return classify_http_error(
            self._status,
            self._headers,
            body,
            provider=self.model.provider,
            secrets=secrets,
            cut=self._error_body_cut,
        )


def _matches(ctype: str, accepted: tuple[str, ...]) -> bool:
    base = ctype.split(";", 1)[0].strip().lower()
    return base in accepted


@mypyc_attr(allow_interpreted_subclasses=True)
class FramedCall(ProviderCall, Generic[FrameT]):
    """A provider whose body is a sequence of frames cut by one wire decoder.

    The one feed loop: bytes go to the decoder made by `make_decoder`, each
    frame to `on_frame`, until the emitter has finished; at end of body the
    decoder's last frames, then `on_end`. A `DecodeError` from the decoder ends
    the call in ``Error(kind=limit)`` or ``Error(kind=protocol)``.
    """

    #: a frame that only the end of the body completed (SSE dispatches an
    #: unterminated last event) and that does not parse means the body was cut
    #: inside it: a dropped connection, not bad data. It is then dropped and
    #: `on_end` decides, as for any body without its terminal marker.
    lenient_last_frame: ClassVar[bool] = False

    def __init__(
        self, model: Model, context: Context, options: Options, request: HTTPRequest
    ) -> None:
        super().__init__(model, context, options, request)
        self.decoder: Decoder[FrameT] = self.make_decoder(options)

    def resume(self, request: HTTPRequest) -> ProviderCall:
        self.decoder = self.make_decoder(self.options)  # a cut frame is not carried over
        return super().resume(request)

    @abc.abstractmethod
    def make_decoder(self, options: Options) -> Decoder[FrameT]:
        """The decoder for this body, with the caps of ``options``."""

    @abc.abstractmethod
    def on_frame(self, frame: FrameT) -> None:
        """Handle one decoded frame."""

    def on_end(self) -> None:
        """The body ended; providers with an implicit terminal marker finish here."""

    def _feed(self, data: bytes) -> None:
        for frame in self.decoder.feed(data):
            self.on_frame(frame)
            if self.emit.finished:
                return

    def _eof(self) -> None:
        for frame in self.decoder.end():
            try:
                self.on_frame(frame)
            except Exception as exc:
                if not self.lenient_last_frame:
                    raise
                log.debug("%s: body ended inside an event: %s", self.api, exc)
                self.cut_inside_event = True
                break
            if self.emit.finished:
                return
        self.on_end()


_PATHS: Final = "on_event(event) for decoded events, or raw_data = True and on_run(datas)"


def sse_decoder(options: Options) -> SSEDecoder:
    """An SSE decoder with the line and event caps of ``options``."""
    return SSEDecoder(
        max_line_bytes=options.max_line_bytes, max_event_bytes=options.max_event_bytes
    )


@mypyc_attr(allow_interpreted_subclasses=True)
class SSECall(FramedCall[ServerSentEvent | SSEComment]):
    """A provider whose body is ``text/event-stream``; comments (keep-alives) are skipped.

    A provider either handles `on_event` (the decoded event), or sets
    ``raw_data`` and writes its dialect once, in `on_run`: the data of
    consecutive plain events, as bytes. A read then goes from `receive_data`
    to one bound decoder step (`SSEDecoder.bind`) and from there to `on_run`
    with the read's events (a live stream's read: a one-element run); every
    other way in (an event whose type the provider reads in `on_data`, the
    line parser's events, the end of the body) comes to the same `on_run`.
    """

    content_types = ("text/event-stream",)
    lenient_last_frame = True

    #: True in providers that write `on_run`: their bytes take the raw path
    raw_data: ClassVar[bool] = False
    #: whether `on_run` takes events that name a type too (it ignores the type)
    runs_any_type: ClassVar[bool] = False

    def __init__(
        self, model: Model, context: Context, options: Options, request: HTTPRequest
    ) -> None:
        super().__init__(model, context, options, request)
        path = "on_run" if self.raw_data else "on_event"  # the one path it writes
        if getattr(type(self), path) is getattr(SSECall, path):
            raise TypeError(f"{type(self).__name__} must define {path}: {_PATHS}")
        if self.raw_data:
            decoder = self.decoder
            assert isinstance(decoder, SSEDecoder)
            self._step = decoder.bind(self.on_data, self.on_run, any_type=self.runs_any_type)

    def make_decoder(self, options: Options) -> Decoder[ServerSentEvent | SSEComment]:
        return sse_decoder(options)

    def on_event(self, event: ServerSentEvent) -> None:
        """Handle one decoded SSE event (``raw_data`` providers: as its raw data)."""
        kind = event.event
        self.on_data(event.data.encode(), b"" if kind == "message" else kind.encode())

    def on_frame(self, frame: ServerSentEvent | SSEComment) -> None:
        if type(frame) is ServerSentEvent:
            self.on_event(frame)

    def on_data(self, data: bytes, event_type: bytes) -> bool:
        """One event's raw data and its type as sent (``b""``: none); True once finished.

        A one-element run of `on_run`; a provider whose events' types matter
        reads them here first (`runs_any_type` unset: `on_run` only ever gets
        events without one)."""
        return self.on_run([data])

    def on_run(self, datas: list[bytes]) -> bool:
        """The data of consecutive events in stream order; True once finished.

        The one place a ``raw_data`` provider reads its events: whole regions
        of a large read at once, and one event (a one-element run) from any
        other way in, so no behaviour exists twice. Any run split into runs
        anywhere must act the same: the chunking properties feed both."""
        raise NotImplementedError(f"{type(self).__name__} must define on_run: {_PATHS}")


@mypyc_attr(allow_interpreted_subclasses=True)
class NDJSONCall(FramedCall[bytes]):
    """A provider whose body is newline-delimited JSON (Ollama)."""

    content_types = ("application/x-ndjson", "application/json", "application/jsonl")

    def make_decoder(self, options: Options) -> Decoder[bytes]:
        return NDJSONDecoder(max_line_bytes=options.max_event_bytes)

    @abc.abstractmethod
    def on_line(self, line: bytes) -> None:
        """Handle one JSON line."""

    def on_frame(self, frame: bytes) -> None:
        self.on_line(frame)
