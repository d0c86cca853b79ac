"""OpenAI chat bodies built to be cut: any cut near the middle of the bytes (the fake
provider's ``reset``, ``truncated``, ``stall-mid`` ...) falls inside a tool call's
arguments or inside the text; shared by the server's and the shells' tests."""

from __future__ import annotations

from streamfn.fuzz._fake_bodies import sse

__all__ = ["CUT_PATH", "output_first", "text_body", "tool_body"]

#: the path a cut ``delete_files`` call has reached; repaired, it would be a valid input
CUT_PATH = "/home/user"


def _chunk(delta: dict[str, object], finish: str | None = None) -> bytes:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return sse({"id": "c1", "object": "chat.completion.chunk", "model": "m", "choices": [choice]})


def tool_body() -> bytes:
    """A ``delete_files`` call whose arguments stream in many small pieces, so any cut
    near the middle of the body falls inside them: ``{"path": "/home/user/x/x...``."""
    call = {"index": 0, "id": "call_1", "type": "function"}
    head = _chunk({"role": "assistant", "content": None}) + _chunk(
        {"tool_calls": [{**call, "function": {"name": "delete_files", "arguments": ""}}]}
    )
    pieces = ['{"path": "', CUT_PATH] + ["/x"] * 200 + ['"}']
    args = b"".join(
        _chunk({"tool_calls": [{"index": 0, "function": {"arguments": p}}]}) for p in pieces
    )
    return head + args + _chunk({}, "tool_calls") + b"data: [DONE]\n\n"


def text_body() -> bytes:
    words = b"".join(_chunk({"content": f"word{i} "}) for i in range(200))
    return (
        _chunk({"role": "assistant", "content": ""})
        + words
        + _chunk({}, "stop")
        + (b"data: [DONE]\n\n")
    )


def output_first(body: bytes) -> bytes:
    """``body`` without its first event, the role-only chunk that says nothing: its first
    event then carries output (a tool call's start, or the first words). The fake
    provider's ``oversized`` fault sends the first event, then a line over the caps, so
    with this body the cut comes after output began, the case a cut answer is about."""
    first, rest = body.split(b"\n\n", 1)
    assert b'"role"' in first, first
    return rest
