"""An HTTP/1.1 response costs one socket write per ASGI message, not one per piece.

hypercorn wrote a response's head, each body message and the chunked
terminator separately: a streamed answer of one read was four writes (four
system calls, four wake-ups of the client). The head now leaves with the first
body message and the terminator with the last; the bytes on the wire are the
same. Counted at the connection's writes, on both shells.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypercorn.events import RawData
from loopback_server import KEY, read_all, serving

from streamfn.asgi._connections import GuardedProtocol

pytestmark = pytest.mark.usefixtures("shell")


@pytest.fixture
def writes(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[bytes]]:
    """Every non-empty write the server's HTTP/1.1 connections make, in order."""
    seen: list[bytes] = []
    forward = GuardedProtocol._forward

    async def counted(self: GuardedProtocol, event: Any) -> None:
        if isinstance(event, RawData) and event.data:
            seen.append(event.data)
        await forward(self, event)

    monkeypatch.setattr(GuardedProtocol, "_forward", counted)
    yield seen


def _post(port: int, body: dict[str, Any]) -> bytes:
    import socket

    payload = json.dumps(body).encode()
    sock = socket.create_connection(("127.0.0.1", port))
    with sock:
        sock.sendall(
            b"POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n"
            b"authorization: Bearer %s\r\ncontent-type: application/json\r\n"
            b"content-length: %d\r\n\r\n%s" % (KEY.encode(), len(payload), payload)
        )
        return read_all(sock)


def test_a_stream_sends_its_head_with_its_first_body_and_its_end_with_its_last(
    writes: list[bytes],
) -> None:
    with serving() as (server, _):
        ask = {
            "model": "demo-text",
            "stream": True,
            "messages": [{"role": "user", "content": "hi"}],
        }
        wire = _post(server.port, ask)
    assert wire.startswith(b"HTTP/1.1 200") and wire.endswith(b"0\r\n\r\n")
    assert b"".join(writes) == wire  # the same bytes, in the same order
    head, _, first = writes[0].partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200") and first  # not the head alone
    assert writes[-1].endswith(b"0\r\n\r\n") and writes[-1] != b"0\r\n\r\n"


def test_a_whole_answer_is_one_write(writes: list[bytes]) -> None:
    with serving() as (server, _):
        ask = {"model": "demo-text", "messages": [{"role": "user", "content": "hi"}]}
        wire = _post(server.port, ask)
    assert wire.startswith(b"HTTP/1.1 200")
    assert writes == [wire]
    assert b"Hello" in wire
