"""Client keys in the gateway: each request's key looked up, admitted, and its use recorded.

The decisions are sans-I/O elsewhere: where a client puts its key and what each
refusal says (`streamfn.core.serve._client_keys`), the most a request can cost
(`streamfn.core.serve._reservation`), and whether a key may go (the store's
`admit`, one atomic step across every worker and host). This module makes the
store's calls, always through the runtime's thread pool so a database never
blocks the event loop, and fails closed: a store that cannot answer is a 503,
never a request let through unchecked.

A key found is remembered for at most `KEY_CACHE_SECONDS` (by a hash of its
secret, never the secret): a revoked or rotated key is refused within that time
by every worker, and admission itself reads the key afresh. A secret no key has
is remembered as long (a client retrying a stale key asks the store once a
second), and text not shaped like a secret is refused without asking at all. A 429
(requests or tokens per minute) is remembered too, by key, until its Retry-After:
a client retrying into it is answered from memory, asking the store nothing and
queueing no usage record (`Flight.repeat`: counted on `/metrics`), so one key
hammering past its limit cannot load the store nor crowd the records of the
requests that spent. Those limits are the key's across its models, so is the
memory: naming another served model (a catalogue serves thousands) is answered
from it too, and cannot push other keys' refusals out of it; a model the key may
not use is still asked (its 403). A refusal without a Retry-After (a budget spent
while others' reservations are held, a model not allowed) is asked afresh: it may
lift at once. A token count is admitted like any request (it may ask the
upstream's counting endpoint, on the operator's account): it counts against the
key's requests per minute and needs a budget not spent, but reserves and spends
nothing.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Final

import msgspec

from streamfn.core.dialects._request_fields import ClientRequest
from streamfn.core.serve import HTTPError
from streamfn.core.serve._client_keys import client_refusal, unknown_client_key
from streamfn.core.serve._reservation import most_cost, prompt_tokens
from streamfn.core.serve._routes import presented_key
from streamfn.core.serve._served import Route
from streamfn.core.stages._spend import priced
from streamfn.ledger import Admitted, ClientKey, Refused, Store
from streamfn.ledger._admission import Window, decide
from streamfn.ledger._secrets import hash_secret, well_formed

from ._contract import Backend
from ._observe import Flight, Observer
from ._usage_recorder import UsageRecorder

if TYPE_CHECKING:
    from ._app import App

__all__ = ["KEY_CACHE_SECONDS", "LEASE_SHARE", "ClientKeys", "allowed_models"]

log = logging.getLogger("streamfn")

#: how long a key found in the store is taken as it was (a revocation's delay at most)
KEY_CACHE_SECONDS: Final = 1.0
#: keys (and refusals) remembered at once (past it the memory starts again)
_KEY_CACHE_SIZE: Final = 4096
#: the share of the store's ``lease_ttl`` a stream under a reservation may run: it is
#: cut before its reservation leaves the budget (and its record has time to settle)
LEASE_SHARE: Final = 0.9
#: the routes that need no client key (the operator's take the admin key, never one)
_OPEN: Final = (Route.PREFLIGHT, Route.HEALTH, Route.ADMIN)


def _store_down(what: str, exc: Exception, secret: str = "") -> HTTPError:
    """A store that failed to answer: logged without the request's key (nor its hash,
    should the store's words quote either), a 503 to retry."""
    said = str(exc)
    for hidden in (secret, hash_secret(secret)) if secret else ():
        said = said.replace(hidden, "***")
    log.error("client key store failed to %s (%s: %s)", what, type(exc).__name__, said)
    return HTTPError(
        503, "unavailable", "the gateway's key store is not answering; retry shortly", 1
    )


class ClientKeys:
    """The App's client keys: `identify` at routing, `admit` before any upstream
    request, and the `UsageRecorder` among its observers."""

    def __init__(self, app: App, store: Store) -> None:
        self.app = app
        self.store = store
        # a reservation must outlast the longest stream the server allows, or a stream
        # under a budget would be cut at its lease long before --max-stream-seconds
        store.lease_ttl = max(store.lease_ttl, app.config.max_stream_seconds / LEASE_SHARE)
        self.recorder = UsageRecorder(store)
        #: hash of a secret -> (when it was looked up, on the runtime's clock; its key,
        #: None: no key has it)
        self._known: dict[bytes, tuple[float, ClientKey | None]] = {}
        #: key id -> (Unix seconds until which the store's 429 holds, it)
        self._refused: dict[str, tuple[float, Refused]] = {}

    @property
    def observers(self) -> Iterable[Observer]:
        return (self.recorder,)

    async def identify(
        self, headers: Iterable[tuple[bytes, bytes]], chosen: Route
    ) -> ClientKey | None:
        """The key a request presents (None on a route that needs none), or the 401 of a
        secret no usable key has."""
        if chosen in _OPEN:
            return None
        secret = presented_key(headers)
        if not secret or not well_formed(secret):
            raise unknown_client_key()
        runtime = self.app.runtime
        now = runtime.clock()
        digest = hashlib.sha256(secret).digest()
        known = self._known.get(digest)
        if known is not None and now - known[0] < KEY_CACHE_SECONDS:
            found = known[1]
        else:
            given = secret.decode("latin-1")
            try:
                found = await runtime.to_thread(self.store.key_for_secret, given)
            except Exception as exc:
                raise _store_down("look a key up", exc, given) from None
            if len(self._known) >= _KEY_CACHE_SIZE:
                self._known.clear()
            self._known[digest] = (now, found)
        if found is None:
            raise unknown_client_key()
        key = found
        refused = _unusable(key, time.time())
        if refused is not None:
            raise client_refusal(refused.status, refused.reason, None)
        return key

    async def admit(
        self, flight: Flight, key: ClientKey | None, request: ClientRequest, kind: Route
    ) -> ClientRequest:
        """``request`` admitted on ``key`` (its stream capped at its reservation), or the
        refusal as the client's error, recorded on ``flight``. Before any upstream request.
        ``key`` None: the operator's own request (the dashboard's playground, behind the
        admin key): not limited, recorded without a key."""
        billing = getattr(self.app.backend, "billing_model", None)
        model = None if billing is None else billing(request.model)
        flight.billed_by = model if model is not None and priced(model) else None
        flight.prompt_estimate = prompt = prompt_tokens(model, request.context)
        if key is None:  # priced all the same, so the playground's spend shows
            return request
        flight.key_id, flight.key_name = key.id, key.name
        now = time.time()
        remembered = self._refused.get(key.id)
        if (
            remembered is not None
            and now < remembered[0]
            and (not key.models or request.model in key.models)  # else the store's 403
        ):  # the same answer, from memory
            until, held = remembered
            flight.outcome, flight.repeat = f"refused:{held.reason}", True
            raise client_refusal(held.status, held.reason, max(1.0, until - now))
        if self.recorder.behind:
            flight.outcome = "refused:the usage store is behind"
            raise HTTPError(
                503, "overloaded", "the gateway's usage store is behind; retry shortly", 1
            )
        # a count reserves nothing but is a request against the key's rpm: it may ask
        # the upstream's counting endpoint, on the operator's account, and takes a slot
        counting = kind is Route.COUNT
        estimate = 0.0 if counting else most_cost(model, prompt, request.options.max_tokens)
        try:
            verdict = await self.app.runtime.to_thread(
                _admit, self.store, key, request.model, now, estimate
            )
        except Exception as exc:
            flight.outcome = "error:store"
            raise _store_down("admit a request", exc) from None
        if isinstance(verdict, Refused):
            if verdict.retry_after is not None:  # a 429: the same answer until then
                self._remember(key.id, verdict, now)
            flight.outcome = f"refused:{verdict.reason}"
            raise client_refusal(verdict.status, verdict.reason, verdict.retry_after)
        flight.lease = verdict.lease
        if verdict.cap is None or counting:
            return request
        flight.lease_until = now + self.store.lease_ttl * LEASE_SHARE
        flight.reserved = verdict.cap
        # the stream ends with a budget error, its upstream call closed, past the cap
        options = msgspec.structs.replace(request.options, max_cost=verdict.cap)
        return msgspec.structs.replace(request, options=options)

    def _remember(self, key_id: str, verdict: Refused, now: float) -> None:
        """Hold ``verdict`` for ``key_id``'s requests until its Retry-After (requests
        and tokens per minute are the key's, whichever model a request names)."""
        if len(self._refused) >= _KEY_CACHE_SIZE:
            self._refused = {k: v for k, v in self._refused.items() if v[0] > now}
            if len(self._refused) >= _KEY_CACHE_SIZE:
                self._refused.clear()
        until = now + (verdict.retry_after or 0.0)
        self._refused[key_id] = (until, verdict)

    def close(self) -> None:
        """Keep every usage record still queued (blocks: call it off the loop)."""
        self.recorder.close()


def allowed_models(key: ClientKey | None, backend: Backend) -> list[str]:
    """The served models ``key`` may use (all of them without client keys)."""
    names = backend.list_models()
    if key is None or not key.models:
        return names
    return [name for name in names if name in key.models]


def _admit(
    store: Store, key: ClientKey, model: str, now: float, estimate: float | None
) -> Admitted | Refused:
    return store.admit(key, model, now=now, estimate=estimate)


def _unusable(key: ClientKey, now: float) -> Refused | None:
    """Why ``key`` may not be used now (revoked, expired), or None: the store's own
    decision with the key's models, limits and budget left out (nothing is asked yet)."""
    free = msgspec.structs.replace(key, budget=None, rpm=None, tpm=None, models=())
    verdict = decide(free, "", Window(), now=now, estimate=None, lease="")
    return verdict if isinstance(verdict, Refused) else None
