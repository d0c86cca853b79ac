"""Reading tool calls that a model writes as text: the scanning both tag readers share.

`_tagged.TaggedDecoder` (a local model's raw output) and `_text_tools.TextToolCalls`
(tool calls inside a provider's text) both look for tags in a growing buffer,
hold back a suffix that may still become a tag, find where a JSON arguments
value ends before it is complete, and read ``{"name": ..., "arguments": ...}``
bodies, broken JSON included. One implementation of each, here.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Final

import msgspec

__all__ = [
    "MAX_HEAD",
    "TOOL_HEAD",
    "JSONValueEnd",
    "arguments_json",
    "call_envelope",
    "first_tag",
    "held_prefix",
    "parse_object",
]

#: ``{"name": "<json string>", "arguments": `` followed by the value's first character.
TOOL_HEAD: Final = re.compile(
    r'\A\s*\{\s*"name"\s*:\s*("(?:[^"\\]|\\.)*")\s*,\s*"(?:arguments|parameters)"\s*:\s*(?=\S)'
)
#: a head longer than this cannot be ``{"name": ..., "arguments":``; stop re-matching it
MAX_HEAD: Final = 4096


def held_prefix(buffer: str, tags: Sequence[str]) -> int:
    """Length of the longest suffix of ``buffer`` that could still grow into a tag."""
    longest = 0
    for tag in tags:
        for size in range(min(len(tag) - 1, len(buffer)), longest, -1):
            if buffer.endswith(tag[:size]):
                longest = size
                break
    return longest


def first_tag(buffer: str, tags: Sequence[str]) -> tuple[int, str] | None:
    found: tuple[int, str] | None = None
    for tag in tags:
        at = buffer.find(tag)
        if at >= 0 and (found is None or at < found[0]):
            found = (at, tag)
    return found


class JSONValueEnd:
    """Finds where one JSON object or array ends, one character at a time.

    Only structure matters (depth, strings, escapes); validity is left to the
    fold's parser, which reports errors on the finished text.
    """

    def __init__(self) -> None:
        self.depth = 0
        self.in_string = False
        self.escaped = False
        self.done = False

    def scan(self, text: str) -> int:
        """Index just past the value's last character in ``text``, or -1 if it goes on."""
        for i, ch in enumerate(text):
            if self.in_string:
                if self.escaped:
                    self.escaped = False
                elif ch == "\\":
                    self.escaped = True
                elif ch == '"':
                    self.in_string = False
            elif ch == '"':
                self.in_string = True
            elif ch in "{[":
                self.depth += 1
            elif ch in "}]":
                self.depth -= 1
                if self.depth == 0:
                    self.done = True
                    return i + 1
        return -1


def parse_object(raw: str) -> dict[str, Any] | None:
    try:
        value = msgspec.json.decode(raw.strip())
    except msgspec.DecodeError:
        return None
    return value if isinstance(value, dict) else None


def arguments_json(parsed: dict[str, Any] | None) -> str:
    """The arguments object as JSON text; models sometimes send it JSON-encoded in a string."""
    if parsed is None:
        return ""
    args = parsed.get("arguments", parsed.get("parameters", {}))
    if isinstance(args, str):
        try:
            decoded = msgspec.json.decode(args)
        except msgspec.DecodeError:
            return args
        args = decoded
    return msgspec.json.encode(args).decode()


def call_envelope(body: str) -> tuple[str, str] | None:
    """(name, arguments JSON) from a ``{"name": ..., "arguments": ...}`` body, or None."""
    parsed = parse_object(body)
    if parsed is not None:
        name = parsed.get("name")
        if isinstance(name, str) and name:
            return name, arguments_json(parsed)
        return None
    # Broken JSON: if the name can be read, the model meant that tool; keep its arguments raw.
    head = TOOL_HEAD.match(body[:MAX_HEAD])
    if head is None:
        return None
    name = msgspec.json.decode(head.group(1), type=str)
    rest = body[head.end() :]
    end = JSONValueEnd().scan(rest)
    return (name, rest[:end] if end >= 0 else rest.rstrip()) if name else None
