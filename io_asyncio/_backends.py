"""`streamfn serve`'s backends with asyncio's upstream client.

The backends live in `streamfn.asgi._backends` (they pick no event loop);
this module gives `ProviderBackend` an asyncio `Client` by default. The
local model's backend is `streamfn.cli._serve_local` (the composition
root hands it in).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from streamfn.asgi import _backends as _shared
from streamfn.core._models import Model
from streamfn.core.serve._deployments import Cooldown

from ._client import Client

__all__ = ["ProviderBackend"]


class ProviderBackend(_shared.ProviderBackend):
    """`streamfn.asgi._backends.ProviderBackend` with an asyncio `Client` unless given one."""

    def __init__(
        self,
        client: Any = None,
        environ: Mapping[str, str] | None = None,
        *,
        models: Iterable[Model] = (),
        served: Iterable[_shared.ServedModel] = (),
        registry: bool = True,
        base_urls: Mapping[str, str] | None = None,
        upstream_attempts: int = _shared.UPSTREAM_ATTEMPTS,
        cooldown: Cooldown | None = None,
    ) -> None:
        env = _shared.environment(environ)
        super().__init__(
            client or Client(environ=env),
            env,
            models=models,
            served=served,
            registry=registry,
            base_urls=base_urls,
            upstream_attempts=upstream_attempts,
            cooldown=cooldown,
        )
