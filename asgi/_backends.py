"""Where `streamfn serve` gets its events: upstream providers, the local model, or both.

Backends only open streams; the server owns framing, limits and
cancellation. Model names are the registry's ``provider:id`` keys, plus
``local`` (and the local model's own name) for the CTranslate2 model, plus
the names a gateway configuration gives its upstream models (`ServedModel`):
several under one name are that name's deployments, tried by `failover` in the
order of their `Pool`. Where a request goes and with which key is decided here,
from the server's configuration; the client's options carry only generation knobs.
How the server's attempts compose with the other ways of trying again:
`streamfn.core.stages._try_again`. Nothing
here picks an event loop: the shell's client and the local model's backend
are given by the composition root (``streamfn serve``).
"""

from __future__ import annotations

import os
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterable, Mapping
from contextlib import AbstractAsyncContextManager, aclosing
from typing import Any, Final

import msgspec

from streamfn.client import ClientBase
from streamfn.client._batches import flattened
from streamfn.core import (
    Context,
    Error,
    Event,
    MissingCredentials,
    Model,
    Options,
    StreamError,
    TokenCount,
    UnknownModel,
    get_model,
    list_models,
    with_credentials,
)
from streamfn.core._credentials import resolve_api_key
from streamfn.core._options import client_fields
from streamfn.core.catalogue._models import LOCAL_DEFAULT_ID
from streamfn.core.dialects._request_fields import ClientRequest
from streamfn.core.serve._deployments import (
    Cooldown,
    Deployment,
    DeploymentHealth,
    Pool,
    labels,
)
from streamfn.core.serve._replayed_turns import attribute_client_turns
from streamfn.core.stages._spend import priced

from ._contract import Backend, UnknownModelError, count_tokens, open_batches
from ._failover import failover
from ._observe import current_flight
from ._upstream_text import UpstreamText, configured_keys

__all__ = [
    "LOCAL_NAMES",
    "PAUSE_CONTINUATIONS",
    "UPSTREAM_ATTEMPTS",
    "ProviderBackend",
    "RouterBackend",
    "ServedModel",
    "environment",
]


class ServedModel(msgspec.Struct, kw_only=True):
    """A model a gateway serves under its own name: the upstream, its key, its defaults.

    ``model`` says where the upstream is (provider, wire api, base URL,
    headers); ``api_key_env`` names the environment variable holding its key
    (None: the provider's usual variable, or no key); ``defaults`` are
    generation knobs a client's own values override. Several with one ``name``
    are its deployments: ``deployment`` names each (in health records; default
    the name, numbered from 2 for the second), ``weight`` is its share of the traffic.
    """

    name: str
    model: Model
    api_key_env: str | None = None
    defaults: Options = msgspec.field(default_factory=Options)
    deployment: str = ""
    weight: float = 1.0

    def __post_init__(self) -> None:
        if not self.weight > 0:
            raise ValueError(f"{self.name}: weight must be more than 0, got {self.weight}")


#: requests sent upstream for one client request. The server does not retry by
#: default: a failure before any output (429, 5xx, overloaded, a connect failure or
#: timeout) reaches the client at once as an HTTP error with the upstream's
#: Retry-After, and the client's own retry policy (the SDKs retry 2 more times)
#: decides. Server retries on top would multiply the client's: 3 x 3 = 9 upstream
#: requests for one SDK call against an upstream that always says 429. With N here,
#: one client call costs at most N x the client's own attempts.
UPSTREAM_ATTEMPTS: Final = 1

#: how many times the server continues a turn the provider paused (Anthropic's
#: ``pause_turn``), each by one more upstream request whose whole input (the client's
#: conversation and the turn so far) is billed again on the server's key; past it the
#: client sees the pause (`streamfn.core.dialects._cut.unpaused`). ``streamfn serve
#: --pause-continuations N`` sets it; a model's ``defaults`` do not change it.
PAUSE_CONTINUATIONS: Final = 5

#: the names the local model answers to
LOCAL_NAMES = ("local", f"local:{LOCAL_DEFAULT_ID}", LOCAL_DEFAULT_ID)


def environment(environ: Mapping[str, str] | None) -> dict[str, str]:
    """A copy of ``environ`` (default: this process's), read once at startup."""
    return dict(os.environ if environ is None else environ)


class ProviderBackend:
    """Any registered model, reached over HTTPS with keys from the environment, through
    ``client`` (the shell's: its streams run on the loop that serves the app)."""

    def __init__(
        self,
        client: ClientBase[Any] | None = None,
        environ: Mapping[str, str] | None = None,
        *,
        models: Iterable[Model] = (),
        served: Iterable[ServedModel] = (),
        registry: bool = True,
        base_urls: Mapping[str, str] | None = None,
        list_all: bool = False,
        upstream_attempts: int = UPSTREAM_ATTEMPTS,
        pause_continuations: int = PAUSE_CONTINUATIONS,
        cooldown: Cooldown | None = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        """``models`` are served by ``provider:id`` ahead of the registry's (a
        gateway's own vLLM box, a renamed deployment ...); ``served`` under
        their own names; ``registry`` False serves only those two.
        ``base_urls`` sends every model of a provider to another upstream.
        ``upstream_attempts``: requests sent upstream per client request (see
        `UPSTREAM_ATTEMPTS`; a model's ``defaults`` do not change it), and
        ``pause_continuations`` the paused turns continued per answer (see
        `PAUSE_CONTINUATIONS`). ``cooldown``: how long a failed deployment of a
        name served by several rests; ``clock`` the monotonic clock that times it
        (the app's event loop's, given at `bind_clock`; tests give a fake one).
        `list_models` names only the models whose key this server holds (a
        client cannot use the others: they answer that the server has no
        key); ``list_all`` names every model it knows, keys or not."""
        if upstream_attempts < 1:
            raise ValueError(f"upstream_attempts must be at least 1, got {upstream_attempts}")
        self.upstream_attempts = upstream_attempts
        if pause_continuations < 0:
            raise ValueError(f"pause_continuations must be 0 or more, got {pause_continuations}")
        self.pause_continuations = pause_continuations
        self.environ = environment(environ)
        if client is None:
            raise TypeError(
                "ProviderBackend needs the shell's client: streamfn.io_asyncio.Client() or "
                "streamfn.io_trio.Client() (streamfn.io_asyncio._backends.ProviderBackend "
                "makes an asyncio one)"
            )
        self.client = client
        self.models = {m.key: m for m in models}
        #: each served name's deployments, in the order given
        self.pools: dict[str, Pool[ServedModel]] = _pools(served, cooldown or Cooldown())
        self._clock = clock
        self.registry = registry
        self.base_urls = dict(base_urls or {})
        self.list_all = list_all
        #: every key this server holds, scrubbed from what upstreams say (`UpstreamText`)
        self.keys = configured_keys(
            self.environ, [s.api_key_env for s in self._all_served() if s.api_key_env]
        )

    def _all_served(self) -> list[ServedModel]:
        return [d.target for pool in self.pools.values() for d in pool.deployments]

    def bind_clock(self, clock: Callable[[], float]) -> None:
        """Time cooldowns on ``clock`` (the app's event loop's), unless given one."""
        if self._clock is None:
            self._clock = clock

    def clock(self) -> float:
        """Now, on the clock cooldowns are timed by (a monotonic one until bound)."""
        if self._clock is None:
            self._clock = time.monotonic
        return self._clock()

    def deployments(self) -> list[DeploymentHealth]:
        """Each deployment of each served name: in flight, resting, counts, last failure.
        No key nor key variable; base URLs without userinfo or query. Call it on the
        serving loop (its clock times the rests)."""
        now = self.clock()
        return [health for pool in self.pools.values() for health in pool.health(now)]

    async def aclose(self) -> None:
        """Close idle upstream connections (the server calls this at shutdown)."""
        await self.client.aclose()

    def list_models(self) -> list[str]:
        """What a client can ask for: the models whose upstream key is set here (all
        the models known, with ``list_all``)."""
        names = [
            name
            for name, pool in self.pools.items()
            if any(self._servable(d.target.model, d.target.api_key_env) for d in pool.deployments)
        ]
        names += [key for key, m in self.models.items() if self._servable(m)]
        if self.registry:
            names += [
                m.key
                for m in list_models()
                if m.key not in self.models and m.api != "local" and self._servable(m)
            ]
        return names

    def _servable(self, model: Model, api_key_env: str | None = None) -> bool:
        """Whether this server holds ``model``'s key (keyless servers always do)."""
        if self.list_all:
            return True
        if api_key_env:
            return bool(self.environ.get(api_key_env))
        try:
            resolve_api_key(model, Options(), self.environ)
        except MissingCredentials:
            return False
        return True

    def _resolve(self, name: str) -> Model:
        model = self.models.get(name)
        if model is None and self.registry:
            try:
                model = get_model(name)
            except UnknownModel as exc:
                raise UnknownModelError(str(exc)) from None
        if model is None:
            raise UnknownModelError(
                f"unknown model {name!r}; this server serves: {', '.join(self.list_models())}"
            )
        if model.api == "local":
            raise UnknownModelError(f"{name!r} is a local model; this server does not serve it")
        base_url = self.base_urls.get(model.provider)
        if base_url is not None:
            model = msgspec.structs.replace(model, base_url=base_url)
        return model

    def max_output(self, model: str) -> int | None:
        pool = self.pools.get(model)
        if pool is not None:  # what every deployment can give
            return min(d.target.model.max_output for d in pool.deployments)
        return self._resolve(model).max_output

    def billing_model(self, model: str) -> Model:
        """The model whose prices bound what a request for ``model`` costs (client keys'
        budgets): of a name with several deployments, the dearest, or one without
        prices if any has none (a budget cannot be kept there)."""
        pool = self.pools.get(model)
        if pool is None:
            return self._resolve(model)
        models = [d.target.model for d in pool.deployments]
        unpriced = [m for m in models if not priced(m)]
        return unpriced[0] if unpriced else max(models, key=_dearest)

    def stream(
        self, model: str, context: Context, options: Options
    ) -> AbstractAsyncContextManager[AsyncIterator[Event]]:
        pool = self.pools.get(model)
        if pool is not None:
            return aclosing(flattened(self._failover(pool, context, options)))
        resolved, options, text = self._upstream(self._resolve(model), None, options)
        context = attribute_client_turns(context, resolved)  # keeps their signatures
        return text.wrap(self.client.stream(resolved, context, options))

    def stream_batches(
        self, model: str, context: Context, options: Options
    ) -> AbstractAsyncContextManager[AsyncIterator[list[Event]]]:
        """`stream`'s events as the lists each upstream read decodes to."""
        pool = self.pools.get(model)
        if pool is not None:
            return aclosing(self._failover(pool, context, options))
        resolved = self._resolve(model)
        return self._stream_batches(resolved, None, context, options)

    def _stream_batches(
        self, model: Model, served: ServedModel | None, context: Context, options: Options
    ) -> AbstractAsyncContextManager[AsyncIterator[list[Event]]]:
        resolved, options, text = self._upstream(model, served, options)
        context = attribute_client_turns(context, resolved)  # keeps their signatures
        # the cap's meters count the output once, for the cut and the record alike
        flight = current_flight()
        keep = None if flight is None else flight.metered_by
        return text.wrap_batches(self.client._batches(resolved, context, options, keep))

    def _failover(
        self, pool: Pool[ServedModel], context: Context, options: Options
    ) -> AsyncGenerator[list[Event], None]:
        def open_one(
            served: ServedModel,
        ) -> AbstractAsyncContextManager[AsyncIterator[list[Event]]]:
            return self._stream_batches(served.model, served, context, options)

        return failover(pool, open_one, self.clock, pool.deployments[0].name)

    async def count_tokens(self, model: str, context: Context, options: Options) -> TokenCount:
        """The input tokens of a request for ``model``: its provider's count, or an
        estimate (marked ``estimated``) where the provider cannot count. A failed count
        raises `StreamError` with the `Error` a client may read (scrubbed like a stream's).
        A name served by several deployments is counted by its first choice now."""
        pool = self.pools.get(model)
        if pool is None:
            resolved, served = self._resolve(model), None
        else:
            order = pool.order(self.clock())
            served = pool.deployments[order[0] if order else 0].target
            resolved = served.model
        resolved, options, text = self._upstream(resolved, served, options)
        context = attribute_client_turns(context, resolved)  # keeps their signatures
        try:
            return await self.client.count_tokens(resolved, context, options, estimate=True)
        except StreamError as exc:
            error = text.event(exc.error)
            assert isinstance(error, Error)
            raise StreamError(error) from None

    def _upstream(
        self, resolved: Model, served: ServedModel | None, options: Options
    ) -> tuple[Model, Options, UpstreamText]:
        """``resolved``'s options (``served``'s, for a deployment of a served name), and
        what of its answers a client may read."""
        # the server's retry and pause counts, never a model's defaults nor a client's
        # (see UPSTREAM_ATTEMPTS): the bill per client call stays the one documented
        bounds = {
            "max_attempts": self.upstream_attempts,
            "pause_turn_continuations": self.pause_continuations,
        }
        options = msgspec.structs.replace(options, **bounds)
        if served is not None:
            # a spending cap the server set on this request (a client cannot: it is no
            # client field) stays, or the served model's own, whichever is lower
            caps = [c for c in (options.max_cost, served.defaults.max_cost) if c is not None]
            cap = min(caps) if caps else None
            options = msgspec.structs.replace(
                served.defaults, **bounds, max_cost=cap, **client_fields(options)
            )
            if served.api_key_env:
                key = self.environ.get(served.api_key_env)
                if not key:
                    raise MissingCredentials(
                        f"{served.name} needs its key in ${served.api_key_env}",
                        resolved.provider,
                        (served.api_key_env,),
                    )
                options = msgspec.structs.replace(options, api_key=key)
        # resolved here, so a missing key raises (the operator's log, and the client's
        # no_upstream_key) rather than reaching a client as the shells' Error event
        options = with_credentials(resolved, options, self.environ)
        variables = (served.api_key_env,) if served and served.api_key_env else None
        text = UpstreamText(resolved, options, self.environ, self.keys, variables)
        return resolved, options, text


def _dearest(model: Model) -> tuple[float, float]:
    """How dear ``model`` is, for choosing the price that bounds a pool's requests."""
    return (model.price_output + model.price_input, model.price_cache_write)


def _pools(served: Iterable[ServedModel], cooldown: Cooldown) -> dict[str, Pool[ServedModel]]:
    """``served`` grouped by name, each name's deployments in the order given."""
    grouped: dict[str, list[ServedModel]] = {}
    for entry in served:
        grouped.setdefault(entry.name, []).append(entry)
    pools = {}
    for name, entries in grouped.items():
        named = labels(name, [entry.deployment for entry in entries])
        deployments = [
            Deployment(
                label=label,
                name=name,
                model=entry.model.key,
                base_url=entry.model.base_url,
                weight=entry.weight,
                target=entry,
            )
            for label, entry in zip(named, entries, strict=True)
        ]
        pools[name] = Pool(deployments, cooldown)
    return pools


class RouterBackend:
    """Local names to the local model, everything else to the providers."""

    def __init__(self, local: Backend | None, providers: ProviderBackend | None) -> None:
        """``local``: the local model's backend (``streamfn serve`` builds it), or None."""
        if local is None and providers is None:
            raise ValueError("a server needs a local model, upstream providers, or both")
        self.local = local
        self.providers = providers

    async def aclose(self) -> None:
        if self.providers is not None:
            await self.providers.aclose()

    def bind_clock(self, clock: Callable[[], float]) -> None:
        """The app's clock, for the providers' deployment cooldowns."""
        if self.providers is not None:
            self.providers.bind_clock(clock)

    def deployments(self) -> list[DeploymentHealth]:
        """The providers' deployments (`ProviderBackend.deployments`)."""
        return [] if self.providers is None else self.providers.deployments()

    def list_models(self) -> list[str]:
        names: list[str] = []
        if self.local is not None:
            names += self.local.list_models()
        if self.providers is not None:
            names += self.providers.list_models()
        return names

    def _route(self, model: str) -> Backend:
        if model in LOCAL_NAMES:
            if self.local is None:
                raise UnknownModelError("this server was started without the local model")
            return self.local
        if self.providers is None:
            raise UnknownModelError(
                f"unknown model {model!r}: this server serves only the local model ('local')"
            )
        return self.providers

    def max_output(self, model: str) -> int | None:
        return self._route(model).max_output(model)

    def billing_model(self, model: str) -> Model | None:
        """What a request for ``model`` is billed by: the providers' model, or the local
        model's record (it costs nothing); None for a backend that does not say."""
        backend = self._route(model)
        if backend is self.local:
            return Model(id=model, provider="local", api="local", base_url="")
        billing = getattr(backend, "billing_model", None)
        return None if billing is None else billing(model)

    def stream(
        self, model: str, context: Context, options: Options
    ) -> AbstractAsyncContextManager[AsyncIterator[Event]]:
        return self._route(model).stream(model, context, options)

    def stream_batches(
        self, model: str, context: Context, options: Options
    ) -> AbstractAsyncContextManager[AsyncIterator[list[Event]]]:
        return open_batches(self._route(model), model, context, options)

    async def count_tokens(self, model: str, context: Context, options: Options) -> TokenCount:
        request = ClientRequest(model=model, context=context, options=options)
        return await count_tokens(self._route(model), request)
