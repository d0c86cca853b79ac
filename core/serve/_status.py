"""What a refused or failed request becomes on the wire: status, headers, body, per dialect.

A request the server refuses (bad key, bad body, server busy) and an error
the backend reports before any output are both HTTP errors in the client's
own shape, so SDK clients raise their usual exceptions and retry what is
retryable. `HTTPError` carries our generic kind; a `Dialect` turns it into
the word and body its clients expect; `early_error` maps an `Error` event
to the status an SDK knows.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, ClassVar, Final

import msgspec

from streamfn.core.dialects.anthropic._encode import anthropic_error_body, anthropic_error_type
from streamfn.core.dialects.openai_chat._encode import openai_error_type

from .._errors import StreamfnError
from .._events import Error, ErrorKind, Event
from ._log_text import loggable

__all__ = [
    "ANTHROPIC",
    "JSON_HEADERS",
    "MISCONFIGURED",
    "OPENAI",
    "OWN_STATUSES",
    "SSE_HEADERS",
    "STATUS_FOR_KIND",
    "TIMEOUT_WORDS",
    "Dialect",
    "HTTPError",
    "early_error",
    "error_response",
    "for_the_client",
    "is_shutting_down",
    "is_timeout",
    "json_body",
    "key_refused",
    "no_upstream_key",
    "shutting_down",
    "shutting_down_refusal",
]

log = logging.getLogger("streamfn")

Headers = list[tuple[bytes, bytes]]

SSE_HEADERS: Final[Headers] = [
    (b"content-type", b"text/event-stream; charset=utf-8"),
    (b"cache-control", b"no-cache"),
    (b"x-accel-buffering", b"no"),
]
JSON_HEADERS: Final[Headers] = [(b"content-type", b"application/json")]
_json: Final = msgspec.json.Encoder()


class HTTPError(StreamfnError):
    """A request answered with an error status; ``kind`` is our generic word for it."""

    def __init__(
        self,
        status: int,
        kind: str,
        message: str,
        retry_after: float | None = None,
        headers: Headers | None = None,
    ):
        super().__init__(message)
        self.status = status
        self.kind = kind
        self.message = message
        self.retry_after = retry_after
        self.headers = headers or []


#: what HTTP status an error before any output becomes, by kind
STATUS_FOR_KIND: Final = {
    ErrorKind.THROTTLED: 429,
    ErrorKind.CONTEXT_OVERFLOW: 400,
    ErrorKind.INVALID_REQUEST: 400,
    ErrorKind.CONTENT_FILTER: 400,
    ErrorKind.AUTH: 502,  # the upstream rejected *our* key: not the client's fault
    ErrorKind.NETWORK: 502,
    ErrorKind.PROTOCOL: 502,
    ErrorKind.LIMIT: 502,
    ErrorKind.BUDGET: 403,  # a spending cap reached: the caller's budget, not retried
}
#: statuses a backend error keeps as they are (not the client's nor the upstream's fault)
OWN_STATUSES: Final = frozenset({404, 503})

#: generic kinds of our own errors that mean what an ErrorKind means, so each
#: dialect names them as it names that kind
_KIND_AS_ERROR_KIND: Final = {
    "auth": ErrorKind.AUTH,
    "invalid_request": ErrorKind.INVALID_REQUEST,
    "overloaded": ErrorKind.THROTTLED,
    "unavailable": ErrorKind.NETWORK,
}


class Dialect:
    """How one client API frames errors (OpenAI's shape; every route but Anthropic's)."""

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


class AnthropicDialect(Dialect):
    """Anthropic's error shape and words (``/v1/messages``)."""

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


OPENAI: Final = Dialect()
ANTHROPIC: Final = AnthropicDialect()


def error_response(dialect: Dialect, exc: HTTPError) -> tuple[int, Headers, bytes]:
    """Status, headers and body of ``exc`` in ``dialect``."""
    headers = list(JSON_HEADERS) + exc.headers
    if exc.retry_after is not None:
        headers.append((b"retry-after", str(int(exc.retry_after + 0.999)).encode()))
    if exc.status == 401:
        headers.append((b"www-authenticate", b"Bearer"))
    return exc.status, headers, dialect.error_body(dialect.word(exc.kind), exc.message)


#: how our timers' errors begin (the client shells' connect, first-byte, idle and
#: total deadlines): a gateway answers them 504, the upstream took too long
TIMEOUT_WORDS: Final = ("connect timeout", "first-byte timeout", "idle timeout", "total timeout")


def is_timeout(error: Error) -> bool:
    """Whether ``error`` is a deadline that passed (ours, or the upstream's 408/504)."""
    return error.status in (408, 504) or (
        error.kind == ErrorKind.NETWORK and error.message.startswith(TIMEOUT_WORDS)
    )


def early_error(dialect: Dialect, error: Error) -> HTTPError:
    """An error before anything was sent to the client, as the HTTP error its SDK knows.

    Before any output, or at any point of a non-streaming request (nothing is
    sent until the answer is whole: a cut answer is this error, never a body).
    A deadline is 504, a failed or broken upstream 502. An upstream key the server lacks
    or the upstream refused is 502 too (the server's fault, not the client's: a 401 or
    403 would make a client fix its own key) with ``x-should-retry: false``."""
    if error.status in OWN_STATUSES:
        status = error.status
    elif is_timeout(error):
        status = 504
    elif error.kind is not None:
        status = STATUS_FOR_KIND.get(error.kind, 502)
    else:
        status = 502
    # the server's own key missing or refused: the same request fails until the operator
    # acts, so the SDKs (which retry any 5xx) are told not to retry it
    headers = [_NO_RETRY] if error.kind == ErrorKind.AUTH else None
    return HTTPError(
        status, dialect.error_type(error.kind), error.message, error.retry_after, headers
    )


_SHUTTING_DOWN: Final = "server is shutting down; retry on another instance or in a moment"


def shutting_down() -> Error:
    return Error(
        message=_SHUTTING_DOWN,
        kind=ErrorKind.NETWORK,
        status=503,
        retry_after=1,
    )


def is_shutting_down(event: Event) -> bool:
    """Whether ``event`` is this server's own `shutting_down` error (no upstream's)."""
    return isinstance(event, Error) and event.status == 503 and event.message == _SHUTTING_DOWN


def shutting_down_refusal() -> HTTPError:
    """`shutting_down` before a response started: a 503 the client may retry elsewhere."""
    error = shutting_down()
    return HTTPError(503, "unavailable", error.message, retry_after=error.retry_after)


#: how a client's message about the server's own upstream key begins: the operator's
#: to fix, not the client's (a client's own key never reaches the upstream)
MISCONFIGURED: Final = "this streamfn server is misconfigured: "
#: what the operator is told to set when the variable is not known here
_SOME_VARIABLE: Final = "the variable holding this model's key"


def _variables(variables: Sequence[str], *, all_of: bool = False) -> str:
    return (" and " if all_of else " or ").join(variables) or _SOME_VARIABLE


def no_upstream_key(variables: Sequence[str] = (), *, all_of: bool = False) -> str:
    """What a client hears when the server lacks the upstream key for the model it asked
    for; ``variables``: where the operator must put it (``all_of``: each of them)."""
    return (
        f"{MISCONFIGURED}it has no upstream key for this model; its operator must set "
        f"{_variables(variables, all_of=all_of)} (no key sent by a client can fix this); "
        "GET /v1/models lists the models it can serve"
    )


def key_refused(variables: Sequence[str] = (), *, all_of: bool = False) -> str:
    """What a client hears when the upstream refused the server's own key."""
    return (
        f"{MISCONFIGURED}the upstream refused its credentials for this model; its operator "
        f"must put a valid key in {_variables(variables, all_of=all_of)} "
        "(no key sent by a client can fix this)"
    )


def for_the_client(
    event: Event, model: str, variables: Sequence[str] = (), *, all_of: bool = False
) -> Event:
    """``event`` as an untrusted client may see it: an upstream's refusal of the server's
    own key can quote part of it ("Incorrect API key provided: sk-...abcd"), so its
    words stay in the log, and the client is told the server is misconfigured and which
    variable (``variables``) its operator must fix."""
    if (
        isinstance(event, Error)
        and event.kind == ErrorKind.AUTH
        and not event.message.startswith(MISCONFIGURED)  # already worded for the client
    ):
        log.error(
            "upstream refused the server's credentials for %s: %s",
            loggable(model),
            loggable(event.message, 2000),
        )
        return msgspec.structs.replace(event, message=key_refused(variables, all_of=all_of))
    return event


#: the header the openai and anthropic SDKs obey before their status rules (their
#: ``_should_retry``: "false" and they make no second request, whatever the status)
_NO_RETRY: Final = (b"x-should-retry", b"false")


def json_body(obj: Any) -> bytes:
    return _json.encode(obj)
