"""Making a client key, once for every store: a fresh id and secret; the store keeps the hash."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

from ._records import ClientKey, Period
from ._secrets import hash_secret, new_key_id, new_secret

__all__ = ["KeyMaking"]


class KeyMaking(ABC):
    """`Store.create_key` for a store that says how it keeps a new key (`_add_key`)."""

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
        """A new key and its secret (the only time the secret is seen); a limit of 0
        requests or tokens a minute, or a negative budget, is a `ValueError` (a key
        that may do nothing is a revoked one)."""
        for limit, value in (("rpm", rpm), ("tpm", tpm)):
            if value is not None and (isinstance(value, bool) or value < 1):
                raise ValueError(f"{limit} must be 1 or more (or None: no limit), got {value!r}")
        if budget is not None and not budget >= 0:
            raise ValueError(f"budget must be 0 or more US dollars (or None), got {budget!r}")
        key = ClientKey(
            id=new_key_id(),
            name=name,
            created_at=now,
            models=tuple(models),
            budget=budget,
            period=period,
            rpm=rpm,
            tpm=tpm,
            expires_at=expires_at,
        )
        secret = new_secret()
        self._add_key(key, hash_secret(secret))
        return key, secret

    @abstractmethod
    def _add_key(self, key: ClientKey, secret_hash: str) -> None:
        """Keep ``key``, found later by ``secret_hash``."""
