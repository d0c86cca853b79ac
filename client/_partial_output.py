"""Partial structured output on an async stream (the fold itself:
`streamfn.core.stages._partial_output.PartialOutputs`).
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator
from typing import Any

from streamfn.core import Event, PartialOutput, PartialOutputs
from streamfn.core.stages._partial_output import check_finished

__all__ = ["partial_outputs"]


async def partial_outputs(events: AsyncIterable[Event], spec: Any) -> AsyncIterator[PartialOutput]:
    """The answer's object as it grows, then validated (the last one has ``final``).

    ``async with client.stream(model, ctx, options) as events:``
    ``async for partial in partial_outputs(events, options.response_schema): ...``

    Raises `CompletionError` when the stream ends in an `Error`, and
    `OutputValidationError` when the finished answer does not validate.
    """
    outputs = PartialOutputs(spec)
    async for event in events:
        partial = outputs.feed(event)
        if partial is not None:
            yield partial
    check_finished(outputs)
