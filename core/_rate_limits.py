"""The provider's request id and rate-limit state, read from its response headers.

One reader for every provider (each dialect's response machine calls it when it
makes `Start`), so the same words mean the same thing everywhere:

- OpenAI and the servers that copy it (Groq, Azure, xAI ...):
  ``x-ratelimit-{limit,remaining,reset}-{requests,tokens}``, the reset a duration
  such as ``6m0s``, ``1s`` or ``20ms``
  (https://platform.openai.com/docs/guides/rate-limits#rate-limits-in-headers);
  the request id in ``x-request-id`` (what openai-python's ``_request_id`` reads).
- Anthropic: ``anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-
  {limit,remaining,reset}``, the reset an RFC 3339 time
  (https://docs.anthropic.com/en/api/rate-limits#response-headers); the request
  id in ``request-id`` (what anthropic-python's ``_request_id`` reads).
- Bedrock: the request id in ``x-amzn-requestid`` (what botocore's response
  parser reads as ``ResponseMetadata.RequestId``); no rate-limit headers.

The core reads no clock, so a reset is kept as the header said it: a duration
(`RateLimit.reset_after`, seconds from the moment the response arrived) or an
absolute time (`RateLimit.reset_at`); `RateLimit.reset_in` turns either into
seconds with a time the caller's shell supplies. Upstream text is untrusted: a
count must be a plain non-negative integer, a duration or time must parse, and a
request id must be short printable ASCII (it may be passed on as a header);
anything else is left out, never guessed.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Final

import msgspec

__all__ = [
    "RateLimit",
    "RateLimits",
    "parse_duration",
    "read_rate_limits",
    "read_request_id",
    "request_id_or_none",
]


class RateLimit(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, gc=False):
    """One budget the provider counts against (requests, tokens ...): None where unsaid.

    ``reset_after``: seconds after the response until the budget is full again, as
    OpenAI-style headers say it; ``reset_at``: the time it is, as Anthropic's say it.
    """

    limit: int | None = None
    remaining: int | None = None
    reset_after: float | None = None
    reset_at: datetime | None = None

    def reset_in(self, now: datetime) -> float | None:
        """Seconds from ``now`` (the shell's clock, timezone-aware) until the reset."""
        if self.reset_after is not None:
            return self.reset_after
        if self.reset_at is None:
            return None
        return max(0.0, (self.reset_at - now).total_seconds())


class RateLimits(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, gc=False):
    """The provider's rate-limit state after this request, in one shape for every
    provider (`Start.rate_limits`). ``input_tokens`` and ``output_tokens`` are
    Anthropic's separate budgets; ``tokens`` is the combined one."""

    requests: RateLimit | None = None
    tokens: RateLimit | None = None
    input_tokens: RateLimit | None = None
    output_tokens: RateLimit | None = None


#: (field, OpenAI-style header suffix, Anthropic header stem)
_BUDGETS: Final = (
    ("requests", "requests", "requests"),
    ("tokens", "tokens", "tokens"),
    ("input_tokens", None, "input-tokens"),
    ("output_tokens", None, "output-tokens"),
)
#: the request-id headers, in the order they are trusted
_REQUEST_ID_HEADERS: Final = ("x-request-id", "request-id", "x-amzn-requestid")

_COUNT: Final = re.compile(r"\d{1,18}")
_ID: Final = re.compile(r"[\x21-\x7e]{1,200}")
_DURATION_PART: Final = re.compile(r"(\d{1,12}(?:\.\d{1,9})?)(h|ms|us|µs|ns|m|s)")
_UNIT_SECONDS: Final = {
    "h": 3600.0,
    "m": 60.0,
    "s": 1.0,
    "ms": 1e-3,
    "us": 1e-6,
    "µs": 1e-6,
    "ns": 1e-9,
}
_MAX_TEXT: Final = 64  # a duration or a time longer than this is no header we know


def parse_duration(text: str) -> float | None:
    """Seconds in a Go-style duration (``6m0s``, ``1s``, ``20ms``, ``2m59.56s``) or a bare
    number of seconds (``60``, as some compatible servers send); None if neither."""
    text = text.strip()
    if not text or len(text) > _MAX_TEXT:
        return None
    try:
        return max(0.0, float(text)) if text[0].isdigit() and text[-1].isdigit() else _parts(text)
    except ValueError:
        return None


def _parts(text: str) -> float | None:
    total, at = 0.0, 0
    for match in _DURATION_PART.finditer(text):
        if match.start() != at:
            return None
        total += float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
        at = match.end()
    return total if at == len(text) and at else None


def _time(text: str) -> datetime | None:
    text = text.strip()
    if not text or len(text) > _MAX_TEXT:
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else None  # RFC 3339 always has a zone


def _count(text: str | None) -> int | None:
    if text is None:
        return None
    text = text.strip()
    return int(text) if _COUNT.fullmatch(text) else None


def _budget(
    get: Callable[[str], str | None],
    limit: str,
    remaining: str,
    reset: str,
    read_reset: Callable[[str], float | datetime | None],
) -> RateLimit | None:
    raw_reset = get(reset)
    when = read_reset(raw_reset) if raw_reset is not None else None
    budget = RateLimit(
        limit=_count(get(limit)),
        remaining=_count(get(remaining)),
        reset_after=when if isinstance(when, float) else None,
        reset_at=when if isinstance(when, datetime) else None,
    )
    return budget if budget != _EMPTY else None


_EMPTY: Final = RateLimit()


def _lookup(headers: Iterable[tuple[str, str]]) -> Callable[[str], str | None]:
    table: dict[str, str] = {}
    for key, value in headers:
        table.setdefault(key.lower(), value)  # the first of repeated headers
    return table.get


def read_rate_limits(headers: Iterable[tuple[str, str]]) -> RateLimits | None:
    """The rate-limit state ``headers`` carry, or None when they carry none."""
    get = _lookup(headers)
    found: dict[str, RateLimit] = {}
    for field, openai, anthropic in _BUDGETS:
        budget = None
        if openai is not None:
            budget = _budget(
                get,
                f"x-ratelimit-limit-{openai}",
                f"x-ratelimit-remaining-{openai}",
                f"x-ratelimit-reset-{openai}",
                parse_duration,
            )
        if budget is None:
            stem = f"anthropic-ratelimit-{anthropic}"
            budget = _budget(get, f"{stem}-limit", f"{stem}-remaining", f"{stem}-reset", _time)
        if budget is not None:
            found[field] = budget
    return RateLimits(**found) if found else None


def read_request_id(headers: Iterable[tuple[str, str]]) -> str | None:
    """The provider's id for this request (what its support asks for), or None."""
    get = _lookup(headers)
    for name in _REQUEST_ID_HEADERS:
        value = get(name)
        if value is not None and (found := request_id_or_none(value)) is not None:
            return found
    return None


def request_id_or_none(value: str) -> str | None:
    """``value`` as a request id if it is one (short printable ASCII, so it may be sent
    on as a header), else None."""
    value = value.strip()
    return value if _ID.fullmatch(value) else None
