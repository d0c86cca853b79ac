"""The request id and rate-limit headers a gateway's answer carries, on every route.

A client of `streamfn serve` sees what a client of the provider would: a request id
(the upstream's, from `Start.request_id`, or the server's own when the upstream
sent none or none is known yet) under both names the official SDKs read
(``x-request-id``: openai; ``request-id``: anthropic), and the upstream's rate-limit
state normalised to OpenAI's header names whatever the provider
(``x-ratelimit-{limit,remaining,reset}-{requests,tokens,input-tokens,output-tokens}``,
the reset as seconds: ``360s``, ``0.012s``). An absolute reset (Anthropic's) becomes
seconds on the clock the shell passes in: the core reads none.
"""

from __future__ import annotations

from datetime import datetime
from typing import Final

from .._events import Event, Start
from .._rate_limits import RateLimit, request_id_or_none

__all__ = ["UpstreamIds", "upstream_headers"]

Headers = list[tuple[bytes, bytes]]


class UpstreamIds:
    """What one request's answer will say about its upstream: filled in by the
    producer when the first `Start` arrives, read when the response starts."""

    __slots__ = ("own", "start")

    def __init__(self, own: str) -> None:
        #: this server's id for the request, used where the upstream gave none
        self.own = own
        self.start: Start | None = None

    def saw(self, event: Event) -> bool:
        """Whether ``event`` is a `Start`; the first one is kept (the answer's headers
        name the upstream's first request)."""
        if type(event) is not Start:
            return False
        if self.start is None:
            self.start = event
        return True

    @property
    def request_id(self) -> str:
        """The upstream's request id where known, else this server's own. A `Start` may
        come from any backend (a remote streamfn's, decoded), so its id is checked again."""
        start = self.start
        upstream = start.request_id if start is not None else None
        return (request_id_or_none(upstream) if upstream else None) or self.own


#: (header word, `RateLimits` field)
_BUDGETS: Final = (
    ("requests", "requests"),
    ("tokens", "tokens"),
    ("input-tokens", "input_tokens"),
    ("output-tokens", "output_tokens"),
)


def _seconds(value: float) -> bytes:
    return (f"{value:.3f}".rstrip("0").rstrip(".") + "s").encode()


def _count(value: int) -> bytes | None:
    return str(value).encode() if 0 <= value < 10**18 else None


def _budget_headers(word: str, budget: RateLimit, now: datetime) -> Headers:
    # a `Start` decoded from a remote streamfn holds any numbers: only sane ones go out
    out: Headers = []
    for name, value in (("limit", budget.limit), ("remaining", budget.remaining)):
        text = _count(value) if value is not None else None
        if text is not None:
            out.append((f"x-ratelimit-{name}-{word}".encode(), text))
    reset = budget.reset_in(now)
    if reset is not None and 0 <= reset < 10**9:  # NaN and infinities fail the test too
        out.append((f"x-ratelimit-reset-{word}".encode(), _seconds(reset)))
    return out


def upstream_headers(ids: UpstreamIds, now: datetime) -> Headers:
    """The headers for an answer whose upstream ``ids`` describes, at ``now`` (aware)."""
    request_id = ids.request_id.encode()  # printable ASCII: `read_request_id` checked it
    out: Headers = [(b"x-request-id", request_id), (b"request-id", request_id)]
    limits = ids.start.rate_limits if ids.start is not None else None
    if limits is not None:
        for word, field in _BUDGETS:
            budget: RateLimit | None = getattr(limits, field)
            if budget is not None:
                out += _budget_headers(word, budget, now)
    return out
