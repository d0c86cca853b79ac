"""What the Claude wire formats (Anthropic's Messages, Bedrock's Converse) share
besides thinking: the tool-call ids they accept."""

from __future__ import annotations

import re
from typing import Final

from streamfn.core.providers._convert import id_digest

__all__ = ["claude_tool_call_id"]

#: the characters a Claude tool-use id may hold
_SAFE_ID: Final = re.compile(r"[^a-zA-Z0-9_-]")


def claude_tool_call_id(tool_id: str) -> str:
    """The id Claude accepts for a tool call first named ``tool_id``: letters, digits,
    ``_`` and ``-``, at most 64 characters."""
    cleaned = _SAFE_ID.sub("_", tool_id)
    if cleaned == tool_id and 0 < len(cleaned) <= 64:
        return cleaned
    if not cleaned:
        return "call_" + id_digest(tool_id, 16)
    # Changed or too long: keep it readable and unique with a hash of the original.
    return cleaned[:47] + "_" + id_digest(tool_id, 16)
