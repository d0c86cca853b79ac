"""The one interface every usage store implements (memory, SQLite, PostgreSQL).

Stores are synchronous: the gateway calls them through its runtime's thread pool
(`Runtime.to_thread`), so a database call never blocks the event loop. Every
method that depends on time takes ``now`` (Unix seconds) from its caller.

Budgets hold across workers and hosts because admission is one atomic step in the
store: ``admit`` reads the key's spend in its period plus the reservations of the
requests in flight, and reserves ``estimate`` (capped to what is left) for this
one. A request's stream is capped at its reservation (`Admitted.cap`), so a
budget is overspent by at most one streamed delta per request in flight; a
reservation whose worker died expires after ``lease_ttl`` seconds.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol, TypeAlias

from ._records import Admitted, ClientKey, Period, Refused, UsageRecord

__all__ = ["DEFAULT_LEASE_TTL", "Grouping", "Store"]

#: seconds a reservation outlives its admission when nobody settles it (its worker
#: died): long enough for a long reasoning stream, short enough to free the budget
DEFAULT_LEASE_TTL = 900.0

#: what `Store.report` groups by
Grouping: TypeAlias = Literal["key", "model", "day", "deployment"]


class Store(Protocol):
    """Client keys, admission and the usage record, behind one interface."""

    #: seconds a reservation holds from its admission when nobody settles it: a
    #: request still running then must end (`streamfn.asgi` cuts its stream) or its
    #: reservation would leave the budget while it still spends
    lease_ttl: float

    def create_key(
        self,
        name: str,
        *,
        now: float,
        models: Sequence[str] = (),
        budget: float | None = None,
        period: Period = "month",
        rpm: int | None = None,
        tpm: int | None = None,
        expires_at: float | None = None,
    ) -> tuple[ClientKey, str]:
        """A new key and its secret (the only time the secret is seen)."""
        ...

    def rotate_key(self, key_id: str, *, now: float) -> str:
        """A new secret for the same key (limits, spend and usage kept); the old one
        stops working at once."""
        ...

    def revoke_key(self, key_id: str, *, now: float) -> None:
        """The key stops working (within a second on every worker and host)."""
        ...

    def list_keys(self) -> list[ClientKey]:
        """Every key, revoked ones included, oldest first."""
        ...

    def key_for_secret(self, secret: str) -> ClientKey | None:
        """The key a client presented, or None for a secret no key has (compared by
        hash, in constant time)."""
        ...

    def admit(
        self, key: ClientKey, model: str, *, now: float, estimate: float | None
    ) -> Admitted | Refused:
        """Let a request in or refuse it, atomically across every process sharing
        the store: expiry, revocation, the model list, requests and tokens per
        minute, and the budget (spent in the period plus reservations in flight).
        ``estimate`` is the most this request can cost (None: unpriced)."""
        ...

    def settle(self, lease: str | None, record: UsageRecord) -> None:
        """Keep ``record`` and free ``lease``'s reservation (None: a request that was
        never admitted, e.g. a refusal worth recording)."""
        ...

    def settle_many(self, settled: Sequence[tuple[str | None, UsageRecord]]) -> None:
        """`settle` each (lease, record) of ``settled``, all or none: one transaction,
        so a busy gateway's recorder pays one commit a batch, not one a request."""
        ...

    def spent(self, key_id: str, *, now: float) -> float:
        """What ``key_id`` spent in its current period (settled requests only)."""
        ...

    def records(
        self, *, since: float, until: float, key_id: str | None = None, limit: int = 1000
    ) -> list[UsageRecord]:
        """Usage records in ``[since, until)``, newest first."""
        ...

    def failures(self, *, limit: int = 100) -> list[UsageRecord]:
        """The newest ``limit`` records whose outcome is not ``ok``, newest first (the
        dashboard's recent errors, whichever process served them)."""
        ...

    def report(
        self,
        by: Sequence[Grouping],
        *,
        since: float,
        until: float,
        key_id: str | None = None,
    ) -> list[dict[str, object]]:
        """Totals grouped by ``by`` (of ``key_id``'s requests only, if given): requests,
        each token kind, cost, errors, ``unpriced`` (requests of a model with no
        known prices, whose cost is not counted), how much is the gateway's estimate
        (``estimated`` requests, ``estimated_tokens``, ``estimated_cost``) and
        ``failovers`` (attempts that failed over: by deployment, on the one that failed)."""
        ...

    def prune(self, *, before: float) -> int:
        """Forget the usage records of requests that arrived before ``before`` (and the
        settled reservations of then); how many records went. Spend totals are kept
        apart from the records, so every budget's period stays whole."""
        ...

    def close(self) -> None:
        """Release the connection(s); the store is not used afterwards."""
        ...
