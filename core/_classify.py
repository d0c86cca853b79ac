"""Error classification, in one place for every provider and both shells.

HTTP status + headers + body -> an `Error` with the right `ErrorKind`, the
provider's own message, the status, and ``retry_after``. Provider modules
call `classify_http_error` for non-2xx responses and `classify_stream_error`
for errors that arrive inside a 200 stream (Anthropic ``event: error``, Groq,
Bedrock exception frames), so the same wording maps to the same kind
everywhere.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, Final

import msgspec

from ._events import Error, ErrorKind
from ._redact import redact_url, scrub, shorten

__all__ = [
    "classify_http_error",
    "classify_message",
    "classify_stream_error",
    "extract_error_message",
    "parse_retry_after",
    "redirect_error",
    "retryable_status",
]

# Real wording from providers' context-overflow errors (400/413 bodies).
_CONTEXT_OVERFLOW: Final = re.compile(
    r"prompt is too long"
    r"|maximum context length"
    r"|context[ _-]length[ _-]exceeded"
    r"|exceeds? the context window"
    r"|context window (?:is |was )?exceeded"
    r"|input (?:length|is too long|token count).{0,80}(?:exceed|too long|maximum)"
    r"|too many (?:input )?tokens"
    r"|input length and `max_tokens` exceed"
    r"|input is too long for (?:the )?requested model"  # Bedrock validationException
    r"|reduce the length of the messages"
    r"|request too large for model"
    r"|prompt too long"
    r"|string too long"
    r"|exceeds the maximum number of tokens"
    r"|tokens? (?:exceeds?|exceeding) (?:the )?(?:model'?s? )?(?:maximum|max|limit)",
    re.IGNORECASE,
)
_THROTTLED: Final = re.compile(
    r"rate[ _-]?limit|too many requests|throttl|quota|resource[ _-]exhausted", re.IGNORECASE
)
_OVERLOADED: Final = re.compile(
    r"overloaded|unavailable|internal server error|server[ _-]error|timeout|timed out"
    r"|try again later|capacity"
    r"|while running the model"  # Ollama: the runner process died mid-generation
    r"|upstream connect error|disconnect/reset|connection reset",  # proxies (Envoy) in-stream
    re.IGNORECASE,
)
_AUTH: Final = re.compile(
    r"invalid[ _-]api[ _-]key|unauthori[sz]ed|authentication|permission[ _-]denied"
    r"|access[ _-]denied|forbidden|incorrect api key|invalid x-api-key|api key not valid",
    re.IGNORECASE,
)
_CONTENT_FILTER: Final = re.compile(
    r"content[ _-]?filter|content management policy|responsible ai policy|safety system",
    re.IGNORECASE,
)

# Bedrock's ThrottlingException over HTTP says "Too many tokens, please wait before
# trying again" with no code in the body: a rate limit, though it reads like an overflow.
_WAIT_AND_RETRY: Final = re.compile(r"please wait before trying again", re.IGNORECASE)
# Out of credit (OpenAI 429 insufficient_quota, DeepSeek 402, Anthropic 400): retrying
# cannot help; the account must be fixed, like a bad key.
_BILLING: Final = re.compile(
    r"insufficient[ _](?:quota|balance)|credit balance is too low", re.IGNORECASE
)
# A bad key is an auth error even when the provider answers 400 (Gemini API_KEY_INVALID).
_BAD_KEY: Final = re.compile(
    r"api[ _]key[ _]invalid|api key not valid|invalid[ _]api[ _]key|incorrect api key"
    r"|invalid x-api-key",
    re.IGNORECASE,
)

_MAX_RETRY_AFTER: Final = 24 * 3600.0


def parse_retry_after(
    headers: Iterable[tuple[str, str]] | Mapping[str, str], *, now: datetime | None = None
) -> float | None:
    """Seconds to wait, from ``retry-after-ms`` (OpenAI, Azure) or ``retry-after``.

    ``retry-after`` is delta-seconds or an HTTP-date (RFC 9110 §10.2.3, all
    three date formats). A date is measured against the response's own
    ``Date`` header, so a skewed local clock does not matter; without one,
    against ``now`` (the caller's UTC time: the core reads no clock), and
    without either it is unknown. A date in the past means "now" (0);
    negative, non-numeric and absurd (over a day) values are ignored.
    """
    items = headers.items() if isinstance(headers, Mapping) else headers
    seconds: float | None = None
    millis: float | None = None
    when: datetime | None = None
    sent: datetime | None = None
    for name, value in items:
        lname = name.lower()
        if lname == "retry-after-ms":
            millis = _number(value)
        elif lname == "retry-after":
            seconds = _number(value)
            if seconds is None:
                when = _http_date(value)
        elif lname == "date":
            sent = _http_date(value)
    if millis is not None and 0 <= millis / 1000 <= _MAX_RETRY_AFTER:
        return millis / 1000
    if when is not None and (sent or now) is not None:
        reference = sent or now
        assert reference is not None
        if reference.tzinfo is None:
            reference = reference.replace(tzinfo=UTC)
        seconds = max(0.0, (when - reference).total_seconds())
    if seconds is not None and 0 <= seconds <= _MAX_RETRY_AFTER:
        return seconds
    return None


def _http_date(value: str) -> datetime | None:
    try:
        parsed = parsedate_to_datetime(value.strip())
    except (TypeError, ValueError, IndexError):
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def _number(value: str) -> float | None:
    try:
        number = float(value.strip())
    except ValueError:
        return None
    return number if number == number else None  # NaN is not a delay


#: the most characters of an upstream's error text an `Error` repeats
MAX_MESSAGE_CHARS: Final = 2000


def extract_error_message(body: bytes, *, secrets: Iterable[str] = (), cut: bool = False) -> str:
    """The provider's own message from an error body, whatever its JSON shape.

    Knows ``{"error": {"message"}}`` (OpenAI, Anthropic, Gemini, Mistral),
    ``{"error": "..."}`` (Ollama), ``{"message"}`` / ``{"Message"}`` (Bedrock),
    ``{"detail"}`` (vLLM, FastAPI), and a JSON array of those (Gemini without
    alt=sse). Falls back to the body text. Some upstreams quote the request they
    refused, its ``Authorization`` too: ``secrets`` (the request's own) are scrubbed
    before the text is shortened, and the shortening never leaves part of a word, so
    no cut key survives for a later scrub to miss. ``cut``: the body stopped at its
    cap (its last word may be a part).
    """
    text = body.decode("utf-8", "replace")
    message: str | None = None
    if not cut:  # a body cut at its cap is no JSON
        with contextlib.suppress(msgspec.DecodeError, ValueError):
            message = _find_message(msgspec.json.decode(body))
    shown = shorten(scrub(message or text, secrets), MAX_MESSAGE_CHARS, cut=cut)
    return shown or "(empty body)"


def _find_message(obj: Any, depth: int = 0) -> str | None:
    if depth > 4:
        return None
    if isinstance(obj, list) and obj:
        return _find_message(obj[0], depth + 1)
    if isinstance(obj, str):
        return obj
    if not isinstance(obj, dict):
        return None
    err = obj.get("error")
    if err is not None:
        found = _find_message(err, depth + 1)
        if found:
            code = err.get("type") or err.get("code") if isinstance(err, dict) else None
            if isinstance(code, str) and code and code not in found:
                return f"{code}: {found}"
            return found
    for key in ("message", "Message", "detail", "error_message", "msg"):
        value = obj.get(key)
        if isinstance(value, str) and value:
            return value
        if isinstance(value, (dict, list)):
            found = _find_message(value, depth + 1)
            if found:
                return found
    return None


def _header(headers: Iterable[tuple[str, str]] | Mapping[str, str], name: str) -> str | None:
    items = headers.items() if isinstance(headers, Mapping) else headers
    return next((value for key, value in items if key.lower() == name), None)


def redirect_error(
    status: int, headers: Iterable[tuple[str, str]] | Mapping[str, str], *, provider: str = ""
) -> Error:
    """A 3xx: not followed, named with its target so the caller can fix ``base_url``.

    Following would resend the prompt (a billed generation) and the key to
    another URL; a 301/302/303 would also turn the POST into a GET. The
    usual cause is an ``http://`` base URL behind a CDN that redirects to
    https, a configuration fix: `ErrorKind.INVALID_REQUEST`, never retried.
    """

    location = _header(headers, "location")
    where = f" to {redact_url(location.strip())}" if location else " without a Location"
    prefix = f"{provider} HTTP {status}" if provider else f"HTTP {status}"
    return Error.invalid_request(
        f"{prefix}: redirect{where}; streamfn does not follow redirects (the request and "
        "its credentials are not resent elsewhere): set base_url to the final URL",
        status=status,
    )


def retryable_status(status: int) -> bool:
    """408 request timeout, 429 throttled, 5xx (529 is Anthropic's "overloaded")."""
    return status in (408, 429) or 500 <= status <= 599


def classify_message(
    message: str,
    *,
    status: int | None = None,
    code: str | None = None,
    retry_after: float | None = None,
) -> Error:
    """Kind from the words and code of an error, with the status as a tie-breaker.

    Used for in-stream errors (no status, or the 200 of the stream) and as the
    body-sensitive half of `classify_http_error`. Context overflow is checked
    first: providers send it as 400, 413, and sometimes 429 or in-stream.
    """
    haystack = f"{code or ''} {message}"
    if code and code.lower().startswith("throttling"):
        # Bedrock's throttlingException says "Too many tokens, please wait": the
        # code, not the wording, decides (it is a rate limit, not an overflow).
        return Error.throttled(message, retry_after=retry_after, status=status)
    if _WAIT_AND_RETRY.search(haystack):
        return Error.throttled(message, retry_after=retry_after, status=status)
    if _CONTEXT_OVERFLOW.search(haystack):
        return Error.context_overflow(message, status=status)
    if _BILLING.search(haystack) or _BAD_KEY.search(haystack):
        return Error.auth(message, status=status)
    if status in (401, 403) or (status is None and _AUTH.search(haystack)):
        return Error.auth(message, status=status)
    if status == 429 or (status is None and _THROTTLED.search(haystack)):
        return Error.throttled(message, retry_after=retry_after, status=status)
    if status is not None and retryable_status(status):  # 429 was taken above
        return Error.network(message, status=status, retry_after=retry_after)
    if _CONTENT_FILTER.search(haystack):
        return Error.content_filter(message, status=status)
    if _OVERLOADED.search(haystack) and (status is None or status >= 500 or status == 200):
        return Error.network(message, status=status, retry_after=retry_after)
    if status is not None and 300 <= status < 500:
        return Error.invalid_request(message, status=status)
    # no status (an in-stream error nobody recognises), or a status that is no
    # error at all (1xx/2xx where an error was expected): the wire is not as documented
    return Error(message=message, kind=ErrorKind.PROTOCOL, status=status)


def classify_stream_error(
    message: str,
    *,
    status_hint: int | None = None,
    code: str | None = None,
    retry_after: float | None = None,
) -> Error:
    """An error that arrived inside a 200 stream.

    ``status_hint`` is the HTTP status the provider documents for this error
    (Anthropic's error types, Bedrock's exception types, Gemini's
    ``error.code``). It breaks ties as a real status would, but the response
    itself was a 200, so the `Error` claims no status.
    """
    error = classify_message(message, status=status_hint, code=code, retry_after=retry_after)
    return error if error.status is None else msgspec.structs.replace(error, status=None)


def classify_http_error(
    status: int,
    headers: Iterable[tuple[str, str]] | Mapping[str, str],
    body: bytes,
    *,
    provider: str = "",
    secrets: Iterable[str] = (),
    cut: bool = False,
) -> Error:
    """One `Error` for a non-2xx response, after its (bounded) body was read.

    Every status maps to a documented `ErrorKind` (see `classify_message`; a
    3xx is `redirect_error`). ``secrets`` and ``cut``: as for `extract_error_message`.
    """
    if 300 <= status < 400:
        return redirect_error(status, headers, provider=provider)
    message = extract_error_message(body, secrets=secrets, cut=cut)
    prefix = f"{provider} HTTP {status}: " if provider else f"HTTP {status}: "
    return classify_message(prefix + message, status=status, retry_after=parse_retry_after(headers))
