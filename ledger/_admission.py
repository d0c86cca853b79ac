"""Whether a request may go upstream: one pure decision every store makes the same way.

A store gathers a key's numbers inside one transaction (requests and tokens in
the last minute, the spend of its period, the reservations in flight), asks
`decide`, and on `Admitted` writes the reservation in that same transaction: so
two workers or two hosts can never both spend the last dollar.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from ._records import Admitted, ClientKey, Period, Refused

__all__ = ["WINDOW", "Window", "decide"]

#: the rate limits' window, seconds
WINDOW = 60.0
#: a spent budget, and when it comes back (fixed words: the reason is a metric label)
_RENEWS: dict[Period, str] = {
    "day": "budget for the day is spent: it renews when the next UTC day begins",
    "week": "budget for the week is spent: it renews on Monday, 00:00 UTC",
    "month": "budget for the month is spent: it renews on the 1st, 00:00 UTC",
    "total": "budget is spent and does not renew: ask the gateway's operator for more",
}
#: what a client whose key no longer works can do (it cannot mend the key itself)
_ASK_OPERATOR = "ask the gateway's operator for a new one"


class Window(msgspec.Struct, frozen=True, kw_only=True):
    """A key's numbers at ``now``: what the last `WINDOW` seconds and its period hold.

    ``requests`` are the arrival times of requests admitted in the window (any
    order); ``tokens`` the (time, tokens) of requests settled in it; ``spent`` the
    settled cost of the period; ``reserved`` the reservations of requests in flight.
    """

    requests: Sequence[float] = ()
    tokens: Sequence[tuple[float, int]] = ()
    spent: float = 0.0
    reserved: float = 0.0


def decide(
    key: ClientKey,
    model: str,
    window: Window,
    *,
    now: float,
    estimate: float | None,
    lease: str,
) -> Admitted | Refused:
    """Admit the request under ``lease``, or say why not (no upstream request then).

    The reservation is `Admitted.cap`: the ``estimate`` (the most the request can
    cost) or what is left of the budget, whichever is less. A budget cannot be kept
    on a model with no known prices (``estimate`` None): refused, never uncapped.
    """
    if key.revoked_at is not None and key.revoked_at <= now:
        return Refused(status=401, reason=f"this key was revoked: {_ASK_OPERATOR}")
    if key.expires_at is not None and key.expires_at <= now:
        return Refused(status=401, reason=f"this key has expired: {_ASK_OPERATOR}")
    if key.models and model not in key.models:
        return Refused(
            status=403,
            reason=f"this key may not use the model {model!r}: GET /v1/models lists "
            "the ones it may",
        )
    if key.rpm is not None and len(window.requests) >= key.rpm:
        oldest = sorted(window.requests)[len(window.requests) - key.rpm]
        return Refused(
            status=429,
            reason=f"this key's limit of {key.rpm} requests per minute is reached",
            retry_after=_after(oldest, now),
        )
    if key.tpm is not None:
        used = sum(n for _, n in window.tokens)
        if used >= key.tpm:
            return Refused(
                status=429,
                reason=f"this key's limit of {key.tpm} tokens per minute is reached",
                retry_after=_after(_frees(window.tokens, used - key.tpm), now),
            )
    if key.budget is None:
        return Admitted(lease=lease)
    left = key.budget - window.spent - window.reserved
    if left <= 0:
        return Refused(status=403, reason=f"this key's {_RENEWS[key.period]}")
    if estimate is None:
        return Refused(
            status=403,
            reason=f"the model {model!r} has no known prices, so this key's budget cannot "
            "be kept: give the model prices in the server's config",
        )
    return Admitted(lease=lease, cap=min(left, estimate))


def _after(at: float, now: float) -> float:
    """Seconds until a window entry made at ``at`` leaves the window (at least one)."""
    return max(1.0, at + WINDOW - now)


def _frees(tokens: Sequence[tuple[float, int]], over: int) -> float:
    """When enough of the window's tokens have left it to be under the limit again."""
    freed = 0
    for at, n in sorted(tokens):
        freed += n
        if freed > over:
            return at
    return max(at for at, _ in tokens)
