"""The most a request can cost, reserved against its client key's budget before it goes.

A budget shared by many requests in flight is kept by reserving, at admission, the
most each can cost: its input (estimated: no provider says before the answer) and
all the output it may ask for, priced with the model's own prices by the one
pricing function (`compute_cost`: long-prompt tiers and cache prices included). The
input is priced as cache writes where those cost more (a prompt may be written to
the cache), so the reservation is never below what the provider can bill for it.
The stream is then capped at the reservation (``Options.max_cost``).
"""

from __future__ import annotations

from .._count import estimate_tokens
from .._events import Usage
from .._messages import Context
from ..catalogue._model_spec import Model, compute_cost
from ..stages._spend import priced

__all__ = ["most_cost", "prompt_tokens"]

#: the model an estimate names when the request's has no record (the count is the same)
_ANY = Model(id="", provider="", api="", base_url="")


def prompt_tokens(model: Model | None, context: Context) -> int:
    """The input tokens of ``context``, estimated (`estimate_tokens`)."""
    return estimate_tokens(model or _ANY, context).input_tokens


def most_cost(model: Model | None, prompt: int, max_tokens: int | None) -> float | None:
    """The most a request of ``prompt`` input tokens (`prompt_tokens`) asking for up to
    ``max_tokens`` output tokens (None: the model's own most) can cost on ``model``, in
    US dollars; None when the model has no prices (nothing to reserve with)."""
    if model is None or not priced(model):
        return None
    output = max_tokens if max_tokens is not None else model.max_output
    as_input = compute_cost(model, Usage(input=prompt, output=output)).total
    as_writes = compute_cost(model, Usage(cache_write=prompt, output=output)).total
    return max(as_input, as_writes)
