"""Turns the provider paused, continued: several requests, one coherent stream.

In a long server-tool turn (web search, code execution) Anthropic may stop with
``stop_reason: "pause_turn"`` (`Done.paused`): the turn is not over, and sending
the conversation back with the paused answer as the last assistant turn lets
the model go on where it stopped. `streamfn.client._pause_turn` does that in the
clients' pipeline with the pure parts here, at most ``Options.pause_turn_continuations`` times (0: never,
and the caller sees ``Done.paused``).

What the caller sees is one stream, as if one request had answered: one `Start`
(the first request's), block indexes that go on counting across requests, one
terminal event. Its usage and cost are the sums over every request, because
that is the bill: each continuation is one more request, and its input (the
whole conversation plus everything the turn said so far) is billed again.
A continuation that fails ends the stream with its `Error` (usage summed too);
what the earlier requests said stays, as for any error after output.

Only a request that gives the provider a tool it runs itself can be paused
(`may_pause`): the others' streams are not watched, so they are never folded.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Final, TypeVar

import msgspec

from .._accumulate import Accumulator
from .._events import Cost, Done, Error, Event, Usage
from .._messages import AssistantMessage, Context, ServerTool

if TYPE_CHECKING:
    from .._options import Options
    from ..catalogue._models import Model

__all__ = ["PAUSING_APIS", "PausedTurn", "continued_context", "may_pause", "summed"]

log = logging.getLogger("streamfn")

_Bill = TypeVar("_Bill", Usage, Cost)

#: the wire formats whose providers pause a turn. Not the streamfn proxy: the server
#: continues its upstream's pauses up to its own bound, and a client continuing what
#: it left would multiply the requests the server's operator pays for; a pause the
#: server passes on reaches the caller as ``Done.paused``.
PAUSING_APIS: Final = frozenset({"anthropic"})

#: The request fields through which ``Options.extra_body`` can hand the provider tools
#: it runs itself (``tools`` is extended with what extra_body lists; ``mcp_servers`` is
#: Anthropic's MCP connector, whose tools run on Anthropic's side too). What such a
#: field adds is not ours to read, so a request that sets one is watched.
_SERVER_SIDE_FIELDS: Final = ("tools", "mcp_servers")


def may_pause(model: Model, context: Context, options: Options) -> bool:
    """Can the provider pause this request's turn, so that the stream must be watched
    (and folded, to send the turn back) in case it does?

    Anthropic documents ``pause_turn`` as the stop of its server-side tool loop: "A
    server-tool loop reached its iteration limit", and "When using server tools such
    as web search, the API executes tool calls in a server-side agentic loop. On a
    long-running turn, the API might pause that loop and return a pause_turn stop
    reason" (https://platform.claude.com/docs/en/build-with-claude/handling-stop-reasons,
    https://platform.claude.com/docs/en/agents-and-tools/tool-use/server-tools). So
    only a request that declares such a tool can pause: a `ServerTool` in
    ``context.tools``, or ``extra_body`` setting a field that can add one
    (`_SERVER_SIDE_FIELDS`). No continuations allowed, or a wire format whose
    providers never pause (`PAUSING_APIS`): nothing to watch either.
    """
    if options.pause_turn_continuations <= 0 or model.api not in PAUSING_APIS:
        return False
    if any(isinstance(tool, ServerTool) for tool in context.tools):
        return True
    extra = options.extra_body or {}
    return any(extra.get(field) for field in _SERVER_SIDE_FIELDS)


def continued_context(context: Context, paused: AssistantMessage) -> Context:
    """``context`` with the paused answer as its last assistant turn: the request that
    continues the turn (Anthropic's documented way: send the content back as is)."""
    return msgspec.structs.replace(context, messages=[*context.messages, paused])


def summed(a: _Bill, b: _Bill) -> _Bill:
    """``a + b`` field by field (the constructor computes ``total`` again)."""
    names = [name for name in a.__struct_fields__ if name != "total"]
    return type(a)(**{name: getattr(a, name) + getattr(b, name) for name in names})


class PausedTurn:
    """The turn so far across requests: the fold of what the caller saw (to send back),
    the first free block index, and the bill of the requests already finished."""

    def __init__(self) -> None:
        self.fold = Accumulator()
        self.offset = 0
        self.usage = Usage()
        self.cost = Cost()
        self.requests = 0

    def shifted(self, event: Event) -> Event:
        """``event`` with its block index moved past the earlier requests' blocks."""
        index = getattr(event, "index", None)
        if self.offset and index is not None:
            event = msgspec.structs.replace(event, index=index + self.offset)
        self.fold.add(event)
        return event

    def billed(self, event: Done | Error) -> Done | Error:
        """The terminal event with the earlier requests' usage (and cost) added."""
        if not self.requests:
            return event
        if isinstance(event, Done):
            return msgspec.structs.replace(
                event,
                usage=summed(self.usage, event.usage),
                cost=summed(self.cost, event.cost),
            )
        own = event.usage or Usage()
        return msgspec.structs.replace(event, usage=summed(self.usage, own))

    def pause(self, done: Done) -> AssistantMessage:
        """Book a paused request; the answer so far, to send back."""
        self.requests += 1
        self.usage = summed(self.usage, done.usage)
        self.cost = summed(self.cost, done.cost)
        message = self.fold.message
        self.offset = len(message.content)
        return AssistantMessage(
            content=list(message.content),
            api=message.api,
            provider=message.provider,
            model=message.model,
            response_id=message.response_id,
        )
