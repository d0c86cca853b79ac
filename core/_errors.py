"""Every exception streamfn raises on purpose, as one tree (h11 and msgspec style).

``except StreamfnError`` catches all of them; the branches say whose fault it is::

    StreamfnError
    ├── DecodeError            bytes from the wire cannot be framed (``reason``, ``limit``)
    │   ├── SSEError           text/event-stream
    │   ├── NDJSONError        newline-delimited JSON
    │   ├── EventStreamError   AWS event stream
    │   └── JSONArrayError     a streamed JSON array (Gemini without ``alt=sse``)
    ├── ProtocolViolation      an event sequence broke the event grammar
    ├── PartialJSONError       not (the start of) a JSON document; also a ValueError
    ├── StreamError            a stream ended in an `Error` event and the caller asked to raise
    │   └── CompletionError    the stream behind ``complete()`` did (also holds the partial answer)
    └── UsageError             the caller asked for something that cannot be done; a ValueError
        ├── MissingCredentials no key in the options nor in the environment
        ├── TokenCountUnsupported  the provider has no token counting endpoint
        └── UnknownModel       no registered model by that name; also a KeyError

Raised elsewhere, on the same branches: `CodingError` (a `DecodeError`, a
gzip/deflate body that does not decode, `streamfn.core.http._content_coding`),
and in `streamfn.local` `ConfigError` (a `UsageError`), `TemplateError`,
`PrepareError` and `ConversionError` (under the root).

A provider call never raises: what goes wrong on the wire, and a key missing
before it, comes out as an `Error` event. These exceptions come from the parts a caller drives directly
(decoders, the fold, ``complete()``, the model registry, credentials), and from a
stream whose caller asked for an exception instead of the `Error` event
(``stream(..., raise_on_error=True)``, `streamfn.core.raise_for_error`).

The old names (``SSEError``, ``NDJSONError``, ``EventStreamError``) were three
copies of one class; they are now one `DecodeError` with a subclass each, so
``except SSEError`` keeps working and ``except DecodeError`` catches all.
Where a class was a `ValueError` or a `KeyError` before it still is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._events import Error, ErrorKind
    from ._messages import AssistantMessage

__all__ = [
    "CompletionError",
    "DecodeError",
    "EventStreamError",
    "JSONArrayError",
    "MissingCredentials",
    "NDJSONError",
    "PartialJSONError",
    "ProtocolViolation",
    "SSEError",
    "StreamError",
    "StreamfnError",
    "TokenCountUnsupported",
    "UnknownModel",
    "UsageError",
]


class StreamfnError(Exception):
    """The root: everything streamfn raises on purpose derives from it."""


class DecodeError(StreamfnError):
    """A wire decoder cannot frame the bytes; ``reason`` says why. Sticky.

    ``limit`` is True when a size cap was exceeded rather than the format
    broken, so callers classify the error (``Error(kind=limit)`` or
    ``Error(kind=protocol)``) without reading the wording of ``reason``.
    """

    def __init__(self, reason: str, *, limit: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.limit = limit


class SSEError(DecodeError):
    """`DecodeError` from the SSE decoder (a line or an event over its cap)."""


class NDJSONError(DecodeError):
    """`DecodeError` from the NDJSON decoder (a line over its cap)."""


class EventStreamError(DecodeError):
    """`DecodeError` from the AWS event-stream decoder (bad CRC, prelude, header, cap)."""


class JSONArrayError(DecodeError):
    """`DecodeError` from the JSON-array decoder (not an array, unbalanced, over the cap)."""


class ProtocolViolation(StreamfnError):
    """An event sequence broke the streamfn event grammar.

    ``reason`` says which rule; ``position`` is the 0-based number of the
    offending event in the stream and ``event`` the event itself. A provider
    that produces one has a bug: the core promises valid sequences.
    """

    def __init__(self, reason: str, *, position: int, event: object) -> None:
        super().__init__(f"event #{position}: {reason}")
        self.reason = reason
        self.position = position
        self.event = event


class PartialJSONError(StreamfnError, ValueError):
    """The text is not (the start of) a JSON document, or it ended too early."""


class StreamError(StreamfnError):
    """A stream ended with ``error`` (the `Error` event: ``kind``, ``status``,
    ``retry_after``) where the caller asked for an exception rather than the event.

    Raised by ``stream(..., raise_on_error=True)`` in every shell and by
    `streamfn.core.raise_for_error` on the sans-I/O path, so a program that
    forgets to look for `Error` cannot mistake a failed call for an empty answer.
    """

    def __init__(self, error: Error) -> None:
        kind = f" ({error.kind.value})" if error.kind else ""
        super().__init__(f"{error.message}{kind}")
        self.error = error

    @property
    def kind(self) -> ErrorKind | None:
        return self.error.kind


class CompletionError(StreamError):
    """The stream behind `complete()` ended with ``error``; ``message`` holds what came first."""

    def __init__(self, error: Error, message: AssistantMessage) -> None:
        super().__init__(error)
        self.message = message


class UsageError(StreamfnError, ValueError):
    """The caller asked for something that cannot be done; the message says what to change."""


class MissingCredentials(UsageError):
    """No key in the options nor in the environment; the message names the variable.

    Raised by the functions that resolve keys (``resolve_api_key``,
    ``with_credentials``); the shells turn it into the stream's
    ``Error(kind="auth")`` with the same message, like a rejected key's.

    ``provider`` and ``variables`` let a front end word its own fix (the command
    line offers ``--api-key-env``).
    """

    def __init__(self, message: str, provider: str = "", variables: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.provider = provider
        self.variables = variables


class TokenCountUnsupported(UsageError):
    """The model's provider has no endpoint that counts tokens (and no estimate was
    accepted); the message names the providers that have one."""


class UnknownModel(UsageError, KeyError):
    """No registered model has that name; the message lists close matches."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown model"
