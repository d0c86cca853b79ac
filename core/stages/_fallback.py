"""Fallbacks across models: the next model answers when one fails before any output.

``fallback([primary, backup, ...])`` is a `Model` (a `FallbackModel`), so it
goes wherever a model goes: ``stream(fallback([a, b]), ctx)`` and
``complete(...)`` in both shells. The shell tries the models in order. A
model that fails before the caller has seen any output (the shells hold
`Start` back until the next event, so "no output" is exact) with a kind the
chain falls back on (``throttled`` and ``network`` by default; add
``context_overflow``, ``auth``... with ``on=``) gives way to the next one. Once
output has reached the caller, a failure is an `Error` like any other: the
same rule as retries, so nothing is ever said twice. The `Start` of the
stream names the model that answered.

Keys come from each model's own environment variable (a model without one is
skipped with a warning), never from ``Options.api_key``: one key sent to
every provider of a chain would leak it to all of them.

`falls_back` is the pure decision; `streamfn.client._fallback.fall_back` is the
clients' stage that applies it. How fallback composes with the other ways of trying
again (deployments, retries, recovery) and what each costs: `streamfn.core.stages._try_again`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence

from .._call import check_transport
from .._credentials import MissingCredentials, with_credentials
from .._events import Error, ErrorKind
from .._options import Options
from ..catalogue._models import Model
from ._spend import require_prices
from ._try_again import TRY_AGAIN_KINDS, tries_again

__all__ = ["FallbackModel", "check_chain", "fallback", "falls_back"]

log = logging.getLogger("streamfn")

#: the kinds every layer that tries again before output acts on (`streamfn.core.stages._try_again`)
DEFAULT_KINDS: frozenset[ErrorKind] = TRY_AGAIN_KINDS


class FallbackModel(Model, kw_only=True, frozen=True):
    """A chain of models tried in order (see `fallback`); ``api`` is ``"fallback"``."""

    models: tuple[Model, ...] = ()
    #: the error kinds that pass the turn to the next model
    fall_back_on: frozenset[ErrorKind] = DEFAULT_KINDS


def fallback(models: Sequence[Model], *, on: Iterable[ErrorKind | str] = ()) -> FallbackModel:
    """The models in ``models`` as one, each tried when the previous one fails before
    any output with ``throttled`` or ``network`` (plus the kinds in ``on``)."""
    chain = tuple(m for model in models for m in _flat(model))
    if not chain:
        raise ValueError("fallback() needs at least one model")
    kinds = DEFAULT_KINDS | {ErrorKind(k) for k in on}
    first = chain[0]
    return FallbackModel(
        id=" | ".join(m.key for m in chain),
        provider="fallback",
        api="fallback",
        base_url="",
        context_window=min(m.context_window for m in chain),
        max_output=min(m.max_output for m in chain),
        reasoning=all(m.reasoning for m in chain),
        name=first.name,
        models=chain,
        fall_back_on=frozenset(kinds),
    )


def _flat(model: Model) -> tuple[Model, ...]:
    return model.models if isinstance(model, FallbackModel) else (model,)


def falls_back(chain: FallbackModel, error: Error) -> bool:
    """Whether ``error``, met before any output, passes the turn to the next model."""
    return tries_again(error, chain.fall_back_on)


def check_chain(chain: FallbackModel, options: Options, environ: Mapping[str, str]) -> None:
    """Refuse, before any connection, a chain that cannot work: a shared
    ``Options.api_key``, a model that cannot take ``Options.transport`` or, under
    ``Options.max_cost``, has no prices (`UsageError`: found only when its turn came,
    after the models before it were billed), or no model with credentials
    (`MissingCredentials`)."""
    for model in chain.models:
        check_transport(model, options)
        if options.max_cost is not None:
            require_prices(model)
    shared = [name for name in ("api_key", "base_url", "headers") if getattr(options, name)]
    if shared:
        raise ValueError(
            f"a fallback chain cannot share Options.{shared[0]}: every model's key would go "
            "with it; give each model its own base_url/headers and leave the key to its "
            "environment variable"
        )
    missing: list[str] = []
    for model in chain.models:
        try:
            with_credentials(model, options, environ)
        except MissingCredentials as exc:
            missing.append(str(exc))
        else:
            return
    raise MissingCredentials(
        "no model of the fallback chain has credentials: " + "; ".join(missing)
    )
