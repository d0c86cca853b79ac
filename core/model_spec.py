"""What a model is: the `Model` record and its price arithmetic.

The bottom of the model rooms, so they depend on each other one way:
`capabilities` (the request rules) <- `model_spec` (this) <- `catalog` (the
built-in data) <- `models` (the registry, which loads the catalogue on first
use). `Model` and `compute_cost` are re-exported by `models`, where users
import them from.
"""

from __future__ import annotations

import msgspec

from .capabilities import Capabilities
from .events import Cost, Usage
from .redact import redacted_repr

__all__ = ["Model", "compute_cost"]


class Model(msgspec.Struct, kw_only=True, frozen=True):
    """Where a model is served and what it costs (US dollars per million tokens).

    ``provider`` selects quirks within a wire format (``azure``, ``groq`` ...);
    ``api`` selects the wire format itself. ``repr()`` shows the names of
    ``headers``, never their values.
    """

    id: str
    provider: str
    api: str
    base_url: str
    name: str = ""
    context_window: int = 128_000
    max_output: int = 4_096
    price_input: float = 0.0
    price_output: float = 0.0
    price_cache_read: float = 0.0
    price_cache_write: float = 0.0
    reasoning: bool = False
    images: bool = True
    headers: dict[str, str] | None = None
    #: provider-specific settings (Azure api-version, Vertex project, Bedrock region ...)
    extra: dict[str, str] | None = None
    #: what the model accepts in a request; None: its family's rules in the catalogue
    capabilities: Capabilities | None = None

    @property
    def key(self) -> str:
        return f"{self.provider}:{self.id}"

    def __repr__(self) -> str:
        # headers may carry a key (a gateway's Authorization): names only
        return redacted_repr(self, keys_only=frozenset({"headers"}))


def compute_cost(model: Model, usage: Usage) -> Cost:
    """Price usage with the model's per-million-token prices."""
    m = 1e-6
    return Cost(
        input=usage.input * model.price_input * m,
        output=usage.output * model.price_output * m,
        cache_read=usage.cache_read * model.price_cache_read * m,
        cache_write=usage.cache_write * model.price_cache_write * m,
    )
