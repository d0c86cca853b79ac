"""Where `streamfn serve` gets its events: upstream providers, the local model, or both.

Backends only open streams; the server owns framing, limits and
cancellation. Model names are the registry's ``provider:id`` keys, plus
``local`` (and the local model's own name) for the CTranslate2 model, plus
the names a gateway configuration gives its upstream models (`ServedModel`).
Where a request goes and with which key is decided here, from the server's
configuration; the client's options carry only generation knobs. Nothing
here picks an event loop: the shell's client and the local model's backend
are given by the composition root (``streamfn serve``).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterable, Mapping
from contextlib import AbstractAsyncContextManager
from typing import Any, Final

import msgspec

from streamfn.client import ClientBase
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
from streamfn.core.serve._replayed_turns import attribute_client_turns

from ._contract import Backend, UnknownModelError, count_tokens, open_batches
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
    generation knobs a client's own values override.
    """

    name: str
    model: Model
    api_key_env: str | None = None
    defaults: Options = msgspec.field(default_factory=Options)


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
    ) -> None:
        """``models`` are served by ``provider:id`` ahead of the registry's (a
        gateway's own vLLM box, a renamed deployment ...); ``served`` under
        their own names; ``registry`` False serves only those two.
        ``base_urls`` sends every model of a provider to another upstream.
        ``upstream_attempts``: requests sent upstream per client request (see
        `UPSTREAM_ATTEMPTS`; a model's ``defaults`` do not change it), and
        ``pause_continuations`` the paused turns continued per answer (see
        `PAUSE_CONTINUATIONS`).
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
        self.served = {s.name: s for s in served}
        self.registry = registry
        self.base_urls = dict(base_urls or {})
        self.list_all = list_all
        #: every key this server holds, scrubbed from what upstreams say (`UpstreamText`)
        self.keys = configured_keys(
            self.environ, [s.api_key_env for s in self.served.values() if s.api_key_env]
        )

    async def aclose(self) -> None:
        """Close idle upstream connections (the server calls this at shutdown)."""
        await self.client.aclose()

    def list_models(self) -> list[str]:
        """What a client can ask for: the models whose upstream key is set here (all
        the models known, with ``list_all``)."""
        names = [s.name for s in self.served.values() if self._servable(s.model, s.api_key_env)]
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

    def _resolve(self, name: str) -> tuple[Model, ServedModel | None]:
        served = self.served.get(name)
        if served is not None:
            return served.model, served
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
        return model, None

    def max_output(self, model: str) -> int | None:
        return self._resolve(model)[0].max_output

    def stream(
        self, model: str, context: Context, options: Options
    ) -> AbstractAsyncContextManager[AsyncIterator[Event]]:
        resolved, options, text = self._upstream(model, context, options)
        context = attribute_client_turns(context, resolved)  # keeps their signatures
        return text.wrap(self.client.stream(resolved, context, options))

    def stream_batches(
        self, model: str, context: Context, options: Options
    ) -> AbstractAsyncContextManager[AsyncIterator[list[Event]]]:
        """`stream`'s events as the lists each upstream read decodes to."""
        resolved, options, text = self._upstream(model, context, options)
        context = attribute_client_turns(context, resolved)  # keeps their signatures
        return text.wrap_batches(self.client.stream_batches(resolved, context, options))

    async def count_tokens(self, model: str, context: Context, options: Options) -> TokenCount:
        """The input tokens of a request for ``model``: its provider's count, or an
        estimate (marked ``estimated``) where the provider cannot count. A failed count
        raises `StreamError` with the `Error` a client may read (scrubbed like a stream's)."""
        resolved, options, text = self._upstream(model, context, options)
        context = attribute_client_turns(context, resolved)  # keeps their signatures
        try:
            return await self.client.count_tokens(resolved, context, options, estimate=True)
        except StreamError as exc:
            error = text.event(exc.error)
            assert isinstance(error, Error)
            raise StreamError(error) from None

    def _upstream(
        self, model: str, context: Context, options: Options
    ) -> tuple[Model, Options, UpstreamText]:
        """Where ``model`` goes, with which options, and what of it a client may read."""
        resolved, served = self._resolve(model)
        # the server's retry and pause counts, never a model's defaults nor a client's
        # (see UPSTREAM_ATTEMPTS): the bill per client call stays the one documented
        bounds = {
            "max_attempts": self.upstream_attempts,
            "pause_turn_continuations": self.pause_continuations,
        }
        options = msgspec.structs.replace(options, **bounds)
        if served is not None:
            options = msgspec.structs.replace(served.defaults, **bounds, **client_fields(options))
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
