"""The tool-call checks stage: every complete tool call checked against its tool's schema
(the checks themselves: `streamfn.core.stages._tool_checks.ToolCallChecks`).

Every stream goes through it, tools declared or not: a call of a tool the context never
declared is flagged all the same. The checks of one answer pause between slices of
their work (``pause``, the shell's zero sleep), so a server's event loop answers other
requests while a large or costly answer is checked.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator
from typing import TypeVar

from streamfn.core import Context, Options, ToolCallChecks
from streamfn.core.json._check_budget import Paced

from ._batches import Batches

__all__ = ["with_checked_tool_calls"]

T = TypeVar("T")


def with_checked_tool_calls(
    batches: Batches, context: Context, options: Options, pause: Callable[[], Awaitable[None]]
) -> Batches:
    """``batches`` through `ToolCallChecks` against ``context``'s function tools."""
    return _checked(
        batches, ToolCallChecks(context.function_tools, options.repair_tool_call), pause
    )


async def _paced(steps: Generator[None, None, T], pause: Callable[[], Awaitable[None]]) -> T:
    """What ``steps`` returns, with a ``pause`` wherever it pauses."""
    paced = Paced(steps)
    for _ in paced:
        await pause()
    return paced.result


async def _checked(
    batches: Batches, checks: ToolCallChecks, pause: Callable[[], Awaitable[None]]
) -> Batches:
    try:
        async for batch in batches:
            out = await _paced(checks.feeding(batch), pause)
            if out:
                yield out
        rest = await _paced(checks.finishing(), pause)
        if rest:
            yield rest
    finally:
        await batches.aclose()
