"""Every way streamfn sends a request again, in the one order they apply, with their bill.

Four layers may try again; each one decides alone only *whether* (from its own
options), never *when* or *on what*: that is said here, once.

Outermost first: each layer runs the ones after it once per try.

1. **deployments** (the gateway, ``streamfn serve --config`` with several
   entries under one name): a deployment that fails before any output gives
   the request to the next healthy deployment, each tried at most once, and
   rests (`streamfn.core.serve._deployments`). Costs one more upstream request
   per deployment tried, no tokens (a refusal or a connect failure bills none).
2. **fallback** (``fallback([a, b])``, the library): a model that fails
   before any output gives the turn to the next model of the chain. Costs one
   more request per model tried, no tokens for the ones that failed.
3. **recovery** (``Options.recover``), the only layer that acts *after* output
   began: a connection cut mid-answer is resumed (``"resume"``: one request per
   cut, no tokens) or continued (``"continue"``: one request per cut, the whole
   input billed again plus the answer so far). At most ``Options.max_recoveries``
   cuts per stream.
4. **retry** (``Options.max_attempts``; the gateway pins it to
   ``--upstream-attempts``, 1 by default), innermost, around each request on the
   wire (the first one and each recovery's): the same request again, after the
   backoff or the upstream's Retry-After. Costs up to ``max_attempts`` requests
   per request, no tokens for those refused.

Before output, deployments, fallback and retry multiply: one call costs at
most ``deployments x models x attempts`` upstream requests before its first
output; recovery adds up to ``recoveries x attempts`` after it, never
multiplies the rest (`most_requests`). A paused turn continued (Anthropic's
``pause_turn``) is no failure, so no layer of this story, but its requests are
billed like a ``"continue"``.

The rule shared by the layers before output: **before output** means before
anything but `Start` reached the caller (the shells hold `Start` back until
the next event, so it is exact), and only a failure another try may fix moves
on (`tries_again`: throttled, or a network failure: connect, timeout, 5xx,
overloaded; a fallback chain may add kinds). Once output began no layer but
recovery acts: a cut answer stays a cut answer, never the start of another
one, so nothing is said twice.

`LAYERS` is this order as data. The client's stages
(`streamfn.client._pipeline.STAGES`: fallback outside recovery, the retry in the
driver below every stage) and the gateway (its deployments outside the client's
stream) are built in it, which a test checks.
"""

from __future__ import annotations

from typing import Final, NamedTuple

from .._events import Error, ErrorKind

__all__ = ["LAYERS", "TRY_AGAIN_KINDS", "Layer", "most_requests", "tries_again"]


class Layer(NamedTuple):
    """One way of trying again: its name, when it acts, what it tries next, its price."""

    name: str
    #: True: only before any output reached the caller; False: only after
    before_output: bool
    #: what one more try goes to
    next_try: str
    #: what one more try costs
    cost: str


#: the layers, outermost first (the module docstring says why in this order)
LAYERS: Final = (
    Layer("deployments", True, "the next healthy deployment", "one request, no tokens"),
    Layer("fallback", True, "the next model of the chain", "one request, no tokens"),
    Layer("recovery", False, "the rest of a cut answer", "one request; continue: the input again"),
    Layer("retry", True, "the same request again", "one request, no tokens"),
)

#: the failures before output that another try may fix, for every layer that acts then
TRY_AGAIN_KINDS: Final = frozenset(kind for kind in ErrorKind if kind.retryable)


def tries_again(error: Error, kinds: frozenset[ErrorKind] = TRY_AGAIN_KINDS) -> bool:
    """Whether ``error``, met before any output, may be fixed by another try (``kinds``:
    a fallback chain may add its own, such as ``context_overflow``)."""
    return error.kind is not None and error.kind in kinds


def most_requests(
    *, deployments: int = 1, models: int = 1, attempts: int = 1, recoveries: int = 0
) -> int:
    """The most upstream requests one call makes: before output the layers multiply
    (each runs the ones inside it once per try); each recovered cut adds its own
    request, retried up to ``attempts`` times."""
    attempts = max(1, attempts)
    return max(1, deployments) * max(1, models) * attempts + max(0, recoveries) * attempts
