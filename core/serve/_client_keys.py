"""Client keys at the gateway: what a request with a key nobody has, or a refused one, hears.

A gateway run with a store of client keys lets each client in on its own key: the
shell looks the presented secret (`streamfn.core.serve._routes.presented_key`) up in
the store (`streamfn.asgi`); the decisions about it are here, sans-I/O: the 401 of a
key nobody has, and the error a refusal of the store's admission becomes (401,
403 or 429 with ``Retry-After``, in the client's own error shape). No message
here ever holds the secret, nor anything made from it.
"""

from __future__ import annotations

from typing import Final

from .._events import Error
from ._status import HTTPError

__all__ = ["UNKNOWN_CLIENT_KEY", "client_refusal", "reservation_outlived", "unknown_client_key"]

#: the 401 of a gateway with client keys, for a request with no key or one it has not
UNKNOWN_CLIENT_KEY: Final = (
    "invalid or missing API key for this streamfn gateway: send the client key its "
    "operator gave you (Authorization: Bearer, or x-api-key)"
)

#: our generic error kind for each status a refusal of admission has
_KINDS: Final = {401: "auth", 403: "forbidden", 429: "overloaded"}


def unknown_client_key() -> HTTPError:
    """A request whose key no client key has (or that has none)."""
    return HTTPError(401, "auth", UNKNOWN_CLIENT_KEY)


def client_refusal(status: int, reason: str, retry_after: float | None) -> HTTPError:
    """The store's refusal to admit a request (``reason`` names no secret) as the
    client's error: 401 for a revoked or expired key, 403 for a model the key may not
    use or a spent budget, 429 with ``Retry-After`` for its requests or tokens per minute."""
    kind = _KINDS.get(status, "forbidden")
    return HTTPError(status, kind, reason, retry_after=retry_after if status == 429 else None)


def reservation_outlived(seconds: float) -> Error:
    """The end of a stream that ran as long as its reservation against its key's budget
    holds (``seconds``): past it the budget would no longer count what the stream spends."""
    return Error.budget(
        f"cut: this answer ran for as long as its reservation against the client key's "
        f"budget holds ({seconds:g} s), so the upstream call was cancelled; continue the "
        "conversation in a new request"
    )
