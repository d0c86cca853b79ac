"""The tool-call checks stage: every complete tool call checked against its tool's schema
(the checks themselves: `streamfn.core._tool_checks.ToolCallChecks`).
"""

from __future__ import annotations

from ..core._messages import Context
from ..core._options import Options
from ..core._tool_checks import ToolCallChecks
from ._batches import Batches

__all__ = ["with_checked_tool_calls"]


def with_checked_tool_calls(batches: Batches, context: Context, options: Options) -> Batches:
    """``batches`` through `ToolCallChecks` when ``context`` declares function tools."""
    tools = context.function_tools
    if not tools:
        return batches
    return _checked(batches, ToolCallChecks(tools, options.repair_tool_call))


async def _checked(batches: Batches, checks: ToolCallChecks) -> Batches:
    feed = checks.feed
    try:
        async for batch in batches:
            out = feed(batch)
            if out:
                yield out
        rest = checks.finish()
        if rest:
            yield rest
    finally:
        await batches.aclose()
