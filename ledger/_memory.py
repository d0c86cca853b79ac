"""A store in this process's memory: for tests and a single short-lived server.

Nothing survives a restart and nothing is shared between processes; SQLite
(one host) and PostgreSQL (several hosts) are the stores to run. It is the
reference the others are tested against: same decisions (`decide`), same records.
"""

from __future__ import annotations

import hmac
import threading
from collections.abc import Sequence

import msgspec

from ._admission import WINDOW, Window, decide
from ._key_making import KeyMaking
from ._periods import period_start
from ._records import Admitted, ClientKey, Refused, UsageRecord
from ._report import totals
from ._secrets import hash_secret, new_secret
from ._store import DEFAULT_LEASE_TTL, Grouping

__all__ = ["MemoryStore"]


class MemoryStore(KeyMaking):
    """`Store` in memory, safe to call from several threads."""

    def __init__(self, *, lease_ttl: float = DEFAULT_LEASE_TTL) -> None:
        self.lease_ttl = lease_ttl
        self._lock = threading.Lock()
        self._keys: dict[str, ClientKey] = {}
        self._hashes: dict[str, str] = {}  # key id -> hash of its secret
        self._admitted: dict[str, list[float]] = {}  # key id -> arrival times
        # lease -> (key id, reserved, when it expires unsettled)
        self._leases: dict[str, tuple[str, float, float]] = {}
        self._records: list[UsageRecord] = []
        #: (key id, its period's first second) -> spent: kept apart, as records go
        self._spend: dict[tuple[str, float], float] = {}
        self._next_lease = 0

    def _add_key(self, key: ClientKey, secret_hash: str) -> None:
        with self._lock:
            self._keys[key.id] = key
            self._hashes[key.id] = secret_hash

    def rotate_key(self, key_id: str, *, now: float) -> str:
        secret = new_secret()
        with self._lock:
            self._key(key_id)
            self._hashes[key_id] = hash_secret(secret)
        return secret

    def revoke_key(self, key_id: str, *, now: float) -> None:
        with self._lock:
            self._keys[key_id] = msgspec.structs.replace(self._key(key_id), revoked_at=now)

    def list_keys(self) -> list[ClientKey]:
        with self._lock:
            return sorted(self._keys.values(), key=lambda key: key.created_at)

    def key_for_secret(self, secret: str) -> ClientKey | None:
        wanted = hash_secret(secret)
        with self._lock:
            for key_id, known in self._hashes.items():
                if hmac.compare_digest(known, wanted):
                    return self._keys[key_id]
        return None

    def admit(
        self, key: ClientKey, model: str, *, now: float, estimate: float | None
    ) -> Admitted | Refused:
        with self._lock:
            current = self._keys.get(key.id, key)  # a revocation since the caller looked
            since = now - WINDOW
            arrivals = [at for at in self._admitted.get(key.id, []) if at > since]
            tokens = [  # counted from when each request ended: a long stream counts too
                (r.at + r.latency, r.input_tokens + r.cached_tokens + r.output_tokens)
                for r in self._records
                if r.key_id == key.id and r.at + r.latency > since
            ]
            for lease in [
                lease
                for lease, (owner, _, until) in self._leases.items()
                if owner == key.id and until <= now
            ]:
                del self._leases[lease]  # expired: its worker never settled it
            reserved = sum(held for owner, held, _ in self._leases.values() if owner == key.id)
            window = Window(
                requests=arrivals,
                tokens=tokens,
                spent=self._spent(key.id, period_start(current.period, now)),
                reserved=reserved,
            )
            self._next_lease += 1
            verdict = decide(
                current, model, window, now=now, estimate=estimate, lease=f"m{self._next_lease}"
            )
            if isinstance(verdict, Admitted):
                self._admitted[key.id] = [*arrivals, now]
                self._leases[verdict.lease] = (key.id, verdict.cap or 0.0, now + self.lease_ttl)
            return verdict

    def settle(self, lease: str | None, record: UsageRecord) -> None:
        with self._lock:
            if lease is not None:
                self._leases.pop(lease, None)
            self._records.append(record)
            key = self._keys.get(record.key_id or "")
            if key is not None and record.cost:
                since = (key.id, period_start(key.period, record.at))
                self._spend[since] = self._spend.get(since, 0.0) + record.cost

    def settle_many(self, settled: Sequence[tuple[str | None, UsageRecord]]) -> None:
        for lease, record in settled:
            self.settle(lease, record)

    def spent(self, key_id: str, *, now: float) -> float:
        with self._lock:
            return self._spent(key_id, period_start(self._key(key_id).period, now))

    def records(
        self, *, since: float, until: float, key_id: str | None = None, limit: int = 1000
    ) -> list[UsageRecord]:
        with self._lock:
            kept = [
                r
                for r in self._records
                if since <= r.at < until and (key_id is None or r.key_id == key_id)
            ]
        return sorted(kept, key=lambda r: r.at, reverse=True)[:limit]

    def failures(self, *, limit: int = 100) -> list[UsageRecord]:
        with self._lock:
            failed = [r for r in self._records if r.outcome != "ok"]
        return sorted(failed, key=lambda r: r.at, reverse=True)[:limit]

    def report(
        self,
        by: Sequence[Grouping],
        *,
        since: float,
        until: float,
        key_id: str | None = None,
    ) -> list[dict[str, object]]:
        return totals(self.records(since=since, until=until, key_id=key_id, limit=2**62), by)

    def prune(self, *, before: float) -> int:
        with self._lock:
            kept = [r for r in self._records if r.at >= before]
            gone, self._records = len(self._records) - len(kept), kept
        return gone

    def close(self) -> None:
        pass

    def _key(self, key_id: str) -> ClientKey:
        try:
            return self._keys[key_id]
        except KeyError:
            raise LookupError(f"no client key has the id {key_id!r}") from None

    def _spent(self, key_id: str, since: float) -> float:
        return self._spend.get((key_id, since), 0.0)
