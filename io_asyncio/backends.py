"""Where `streamfn serve` gets its events: the local model, upstream providers, or both.

Backends only open streams; the server owns framing, limits and
cancellation. Model names are the registry's ``provider:id`` keys, plus
``local`` (and the local model's own name) for the CTranslate2 model.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterable, Mapping
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

from streamfn.core.events import Event
from streamfn.core.messages import Context
from streamfn.core.models import Model, UnknownModel, get_model, list_models
from streamfn.core.options import Options

from .client import Client
from .server import UnknownModelError

__all__ = ["LocalBackend", "ProviderBackend", "RouterBackend"]

LOCAL_NAMES = ("local", "local:smollm2-135m-instruct", "smollm2-135m-instruct")


class ProviderBackend:
    """Any registered model, reached over HTTPS with keys from the environment."""

    def __init__(
        self,
        client: Client | None = None,
        environ: Mapping[str, str] | None = None,
        *,
        models: Iterable[Model] = (),
    ) -> None:
        """``models`` are served by ``provider:id`` ahead of the registry's (a
        gateway's own vLLM box, a renamed deployment ...)."""
        self.client = client or Client(environ=dict(environ or os.environ))
        self.models = {m.key: m for m in models}

    async def aclose(self) -> None:
        """Close idle upstream connections (the server calls this at shutdown)."""
        await self.client.aclose()

    def list_models(self) -> list[str]:
        registry = [m.key for m in list_models() if m.key not in self.models]
        return list(self.models) + registry

    def stream(
        self, model: str, context: Context, options: Options
    ) -> AbstractAsyncContextManager[AsyncIterator[Event]]:
        try:
            resolved = self.models.get(model) or get_model(model)
        except UnknownModel as exc:
            raise UnknownModelError(str(exc)) from None
        if resolved.api == "local":
            raise UnknownModelError(f"{model!r} is a local model; this server does not serve it")
        return self.client.stream(resolved, context, options)


class LocalBackend:
    """The local CTranslate2 model, loaded once and shared by all requests.

    Generation runs in a worker thread per request (see `streamfn.local`), so
    concurrent requests queue inside CTranslate2 rather than blocking the loop.
    """

    def __init__(self, model_dir: str | Path | None = None, *, progress: Any = None) -> None:
        from streamfn.local.model import LocalModel

        self.model = LocalModel.default(model_dir, progress=progress)

    def list_models(self) -> list[str]:
        return list(LOCAL_NAMES)

    def stream(
        self, model: str, context: Context, options: Options
    ) -> AbstractAsyncContextManager[AsyncIterator[Event]]:
        if model not in LOCAL_NAMES:
            raise UnknownModelError(f"unknown local model {model!r}; use 'local'")
        return self.model.stream_asyncio(context, options)

    def close(self) -> None:
        self.model.close()


class RouterBackend:
    """Local names to the local model, everything else to the providers."""

    def __init__(self, local: LocalBackend | None, providers: ProviderBackend | None) -> None:
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

    def stream(
        self, model: str, context: Context, options: Options
    ) -> AbstractAsyncContextManager[AsyncIterator[Event]]:
        if model in LOCAL_NAMES:
            if self.local is None:
                raise UnknownModelError("this server was started without the local model")
            return self.local.stream(model, context, options)
        if self.providers is None:
            raise UnknownModelError(
                f"unknown model {model!r}: this server serves only the local model ('local')"
            )
        return self.providers.stream(model, context, options)
