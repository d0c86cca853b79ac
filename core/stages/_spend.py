"""A spending cap for one call (``Options.max_cost``), decided event by event.

Budgets checked between requests let one runaway answer spend without bound; this
cap stops the answer itself. One `SpendCap` per ``stream()`` call is shared by every
request the call makes (the shells' retries, a fallback chain's models, continued
paused turns, recoveries), and a `Meter` follows each request:

- before it is sent, its input is priced: a request whose input alone would take the
  call past the cap is refused, never sent (`Meter.refusal`);
- while it streams, each text, thinking or tool-argument delta adds its estimated
  output tokens (`text_tokens`: the estimate's four characters a token) and the
  running cost is compared with the cap; the delta that crosses it is the last one
  the caller sees, then an ``Error(kind=budget)`` (`Meter.count`), and the driver
  closes the connection, so the provider stops generating and nothing more is read;
- when it ends, what it cost is settled into the call's total: the usage the
  provider reported, priced (`compute_cost`, the one pricing function: cache tiers
  and long-prompt tiers included); the estimate where the provider reported none, or
  where a cut request's report is partial. A request the provider refused (an HTTP
  error status) cost nothing; one it accepted and then failed cost at least its input.

Every price comes from the `Model` (``price_input`` ... ``price_tiers``): a model
without prices cannot be capped and is refused (`require_prices`) rather than run
uncapped. The input is estimated from the request (`estimate_tokens`): the events
carry token counts only at the end (`Done.usage`, or an `Error`'s), and most
providers report them only there. A prompt that asks for caching is priced as cache
writes where those cost more than input. A resumed response (``recover="resume"``)
is priced as a new request: its input counts again, an overcount on the safe side.

The bound, in the meter's own figures: the caller sees every delta while the
running cost is at most the cap, and exactly one more, the delta that crosses it.
So the running cost at the cut is below the cap plus that one delta's cost. The
provider's bill can differ from the meter's estimate by what no event shows
(hidden reasoning, a tokenizer denser than four characters a token, the bytes in
flight when the connection closes); `Done` carries the provider's own figures.
"""

from __future__ import annotations

from typing import Final

from .._count import CHARS_PER_TOKEN, estimate_tokens, text_tokens
from .._errors import UsageError
from .._events import Done, Error, Event, TextDelta, ThinkingDelta, ToolCallDelta, Usage
from .._messages import Context
from .._options import Options
from ..catalogue._model_spec import Model, compute_cost, rates_for

__all__ = ["MOST_TOKENS", "Meter", "SpendCap", "billable", "priced", "require_prices"]

#: the events whose text is output the provider bills as it generates it
_DELTAS: Final = (TextDelta, ThinkingDelta, ToolCallDelta)
#: the most tokens of one kind a report is taken to hold: far past any real answer,
#: far below the 64-bit integers a database column holds
MOST_TOKENS: Final = 10**12


def billable(reported: Usage) -> Usage:
    """``reported`` fit to bill: each count within 0 and `MOST_TOKENS`. A provider's
    report is upstream text: a negative count would price below zero (money given
    back to a budget), a huge one overflow a store's integer column."""
    counts = (reported.input, reported.output, reported.cache_read, reported.cache_write)
    if all(0 <= n <= MOST_TOKENS for n in (*counts, reported.reasoning, reported.total)):
        return reported
    fit = [min(max(n, 0), MOST_TOKENS) for n in counts]
    return Usage(
        input=fit[0],
        output=fit[1],
        cache_read=fit[2],
        cache_write=fit[3],
        reasoning=min(max(reported.reasoning, 0), fit[1]),
    )


def priced(model: Model) -> bool:
    """Whether ``model`` has prices to cap a call with (the local model costs nothing)."""
    return model.api == "local" or bool(
        model.price_input or model.price_output or model.price_tiers
    )


def require_prices(model: Model) -> None:
    """Refuse to cap a call to a model without prices: it would run uncapped."""
    if not priced(model):
        raise UsageError(
            f"Options.max_cost caps what a call costs, but {model.key} has no prices "
            "(price_input and price_output are 0): give the model its prices "
            "(msgspec.structs.replace(model, price_input=..., price_output=...), US "
            "dollars per million tokens) or leave max_cost at None"
        )


def dollars(amount: float) -> str:
    """``amount`` for a message: ``$0.0125``, ``$2``."""
    return "$" + (f"{amount:.8f}".rstrip("0").rstrip(".") or "0")


class SpendCap:
    """What one call may spend (``cap``, US dollars) and what its finished requests
    have cost (``spent``), shared by all of them.

    Its meters' running figure, `streamed`, is the one count of a capped call's
    output: a gateway records it as the output of an answer that never reported its
    usage, rather than counting every delta a second time."""

    __slots__ = ("_meters", "cap", "spent")

    def __init__(self, cap: float) -> None:
        self.cap = cap
        self.spent = 0.0
        self._meters: list[Meter] = []

    @classmethod
    def of(cls, options: Options) -> SpendCap | None:
        """The cap ``options`` asks for, or None."""
        return None if options.max_cost is None else cls(options.max_cost)

    def meter(self, model: Model, context: Context, options: Options) -> Meter:
        """A meter for one request to ``model``; `UsageError` for a model without prices."""
        require_prices(model)
        meter = Meter(self, model, context, options)
        self._meters.append(meter)
        return meter

    @property
    def metering(self) -> bool:
        """Whether a request of the call is metered (the local model's never are)."""
        return bool(self._meters)

    @property
    def streamed(self) -> int:
        """The output tokens the call's requests streamed so far, as the cap counts them:
        each text, thinking or tool-argument delta at `CHARS_PER_TOKEN` characters a
        token, rounded up."""
        return sum(meter.output for meter in self._meters)


class Meter:
    """One request's running cost against its call's `SpendCap`."""

    __slots__ = (
        "_cap",
        "_fixed",
        "_model",
        "_output",
        "_prompt",
        "_rate",
        "_writes",
        "answered",
        "settled",
    )

    def __init__(self, cap: SpendCap, model: Model, context: Context, options: Options) -> None:
        self._cap = cap
        self._model = model
        self._prompt = estimate_tokens(model, context).input_tokens
        #: a prompt that asks for caching may be written to the cache: priced so where
        #: that costs more than input (Anthropic bills writes above the input price)
        cache = options.cache is not None and options.cache != "off"
        self._writes = cache and model.price_cache_write > model.price_input
        # per delta, `estimate` without building a Usage and a Cost: the same sums in
        # the same order as `compute_cost`, so the cut falls on the very same delta
        rates = rates_for(model, self._prompt)
        self._fixed = self._prompt * rates[3 if self._writes else 0] * 1e-6
        self._rate = rates[1]
        self._output = 0
        #: the provider took the request (a 2xx answer): its input is being billed
        self.answered = False
        #: its cost is in the call's total
        self.settled = False

    @property
    def output(self) -> int:
        """The output tokens this request streamed so far, estimated (see `count`)."""
        return self._output

    def answer(self, status: int | None) -> None:
        """The upstream's HTTP status (101: a WebSocket's turn), once known."""
        if status is not None and (200 <= status < 300 or status == 101):
            self.answered = True

    def usage(self) -> Usage:
        """The request's estimated usage so far: its input, and its output as streamed."""
        prompt = self._prompt
        if self._writes:
            return Usage(cache_write=prompt, output=self._output)
        return Usage(input=prompt, output=self._output)

    def estimate(self) -> float:
        """The request's estimated cost so far, in US dollars."""
        return compute_cost(self._model, self.usage()).total

    def refusal(self) -> Error | None:
        """The budget `Error` when the input alone takes the call past its cap."""
        cost = self.estimate()
        cap = self._cap
        if cap.spent + cost <= cap.cap:
            return None
        earlier = f" on top of {dollars(cap.spent)} already spent" if cap.spent else ""
        return Error.budget(
            f"not sent: the input of this request to {self._model.key} would cost about "
            f"{dollars(cost)} (about {self._prompt} tokens, estimated){earlier}, over "
            f"Options.max_cost={dollars(cap.cap)}; raise max_cost, shorten the "
            "conversation or use a cheaper model"
        )

    def count(self, events: list[Event]) -> tuple[list[Event], Error | None]:
        """``events`` up to the delta that takes the call past its cap and the budget
        `Error` to end the stream with, or all of them and None."""
        cap = self._cap
        fixed, rate = self._fixed, self._rate
        for i, event in enumerate(events):
            if isinstance(event, _DELTAS):
                self.answered = True  # output: the provider is generating, and billing
                self._output += text_tokens(len(event.delta))
                if cap.spent + (fixed + self._output * rate * 1e-6) > cap.cap:
                    return events[: i + 1], self._cut()
            elif isinstance(event, Done):
                self._settle(event.usage, final=True)
            elif isinstance(event, Error):
                self._settle(event.usage, final=False)
        return events, None

    def _settle(self, reported: Usage | None, *, final: bool) -> None:
        """Add this request's cost to the call's total, once."""
        if self.settled:
            return
        self.settled = True
        estimate = self.estimate() if self.answered else 0.0
        if reported is not None and reported.total:
            cost = compute_cost(self._model, billable(reported)).total
            # a finished answer's report is the bill; a cut one's may stop short
            self._cap.spent += cost if final else max(cost, estimate)
        else:
            self._cap.spent += estimate

    def _cut(self) -> Error:
        cap = self._cap
        self._settle(None, final=False)
        return Error.budget(
            f"cut: this call has spent about {dollars(cap.spent)}, over "
            f"Options.max_cost={dollars(cap.cap)} (its last request's {self._output} output "
            f"tokens estimated from the streamed text at {CHARS_PER_TOKEN} characters a "
            "token); the request was cancelled. Raise max_cost, lower max_tokens or use a "
            "cheaper model",
            usage=self.usage(),
        )
