"""The text tool-call stage: tool calls a model writes as text, turned into tool-call
events (the parser: `streamfn.core.stages._text_tools.TextToolCalls`).
"""

from __future__ import annotations

from streamfn.core import Context, Model, Options, TextToolCalls
from streamfn.core.stages._text_tools import markups_for

from ._batches import Batches

__all__ = ["with_text_tool_calls"]


def with_text_tool_calls(
    batches: Batches, model: Model, context: Context, options: Options
) -> Batches:
    """``batches`` through `TextToolCalls` when the model or request turns it on, else as is."""
    markups = markups_for(model, options)
    if markups is None:
        return batches
    return _transformed(batches, TextToolCalls(tools=context.function_tools, markups=markups))


async def _transformed(batches: Batches, transform: TextToolCalls) -> Batches:
    feed = transform.feed
    try:
        async for batch in batches:
            out = [made for event in batch for made in feed(event)]
            if out:
                yield out
    finally:
        await batches.aclose()
