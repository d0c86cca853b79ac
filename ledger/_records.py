"""What the ledger keeps: client keys (never their secrets) and one record per request.

These records are the contract between the gateway (which admits requests and
reports what each one used), the stores (SQLite on one host, PostgreSQL across
hosts), the `streamfn keys` / `streamfn usage` commands, `/metrics` and the
dashboard. Every time is Unix seconds, passed in by the caller: nothing here
reads a clock.
"""

from __future__ import annotations

from typing import Literal, TypeAlias

import msgspec

__all__ = ["Admitted", "ClientKey", "Period", "Refused", "UsageRecord"]

#: how a key's money budget renews: each calendar day, ISO week or month (UTC), or never
Period: TypeAlias = Literal["day", "week", "month", "total"]


class ClientKey(msgspec.Struct, frozen=True, kw_only=True):
    """A client key as stored: who it is and what it may do; its secret is never kept.

    ``id`` is public (it names the key in lists, logs, usage and metrics); the secret
    is shown once when the key is made and only a hash of it is stored. Empty
    ``models`` allows every served model; a limit left None is no limit.
    """

    id: str
    name: str
    created_at: float
    models: tuple[str, ...] = ()
    budget: float | None = None  # US dollars per period, priced from the catalogue
    period: Period = "month"
    rpm: int | None = None  # requests per minute
    tpm: int | None = None  # tokens (input + output) per minute
    expires_at: float | None = None
    revoked_at: float | None = None


class UsageRecord(msgspec.Struct, frozen=True, kw_only=True):
    """One request as it ended: who, what, how much and how it went.

    ``outcome`` is ``ok`` (a whole answer), ``cut`` (an error after output began),
    ``error:<kind>`` (an error before any output), ``refused:<reason>`` (refused by
    the ledger: no upstream request) or ``disconnected`` (the client went away).
    ``cost`` is None where the model has no known prices. ``estimated``: the upstream
    reported no usage, so the tokens and cost are the gateway's estimate (the input
    counted at admission, the output from the streamed text). ``attempts`` is how many
    upstreams the request was sent to (0: refused, or gone before it left the gateway;
    more than 1: it failed over), ``tried`` the deployments that failed before the one
    in ``deployment``, in order.
    """

    at: float  # when the request arrived
    key_id: str | None  # None when the gateway runs without client keys
    route: str
    model: str  # the served name the client asked for
    deployment: str | None = None
    input_tokens: int = 0  # uncached input
    cached_tokens: int = 0  # cache reads
    cache_write_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0
    cost: float | None = None
    latency: float = 0.0  # seconds from arrival to the end
    first_token: float | None = None  # seconds from arrival to the first output
    outcome: str = "ok"
    estimated: bool = False
    attempts: int = 1
    tried: tuple[str, ...] = ()


class Admitted(msgspec.Struct, frozen=True, kw_only=True):
    """A request let through: its ``lease`` is settled when it ends.

    ``cap`` is what it may spend (US dollars), None when the key has no budget: the
    gateway ends the stream when the answer's running cost reaches it.
    """

    lease: str
    cap: float | None = None


class Refused(msgspec.Struct, frozen=True, kw_only=True):
    """A request not let through (no upstream request is made).

    ``status`` is 401 (unknown, revoked or expired key), 403 (model not allowed,
    budget spent) or 429 (requests or tokens per minute); ``retry_after`` in seconds
    for a 429; ``reason`` is short, safe to show the client, and names no secret.
    """

    status: int
    reason: str
    retry_after: float | None = None
