"""`bytes_acked` reads Linux's ``struct tcp_info`` only on Linux: elsewhere the same
option name has another layout, and the send-stall watch falls back to completed
writes (None here)."""

from __future__ import annotations

import socket
import sys
import time
from collections.abc import Iterator

import pytest

from streamfn.io_common import _sockets
from streamfn.io_common._sockets import bytes_acked


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    server = socket.create_server(("127.0.0.1", 0))
    client = socket.create_connection(server.getsockname())
    accepted, _ = server.accept()
    yield client, accepted
    for sock in (client, accepted, server):
        sock.close()


def test_elsewhere_than_linux_the_acknowledged_bytes_are_unknown(
    pair: tuple[socket.socket, socket.socket], monkeypatch: pytest.MonkeyPatch
) -> None:
    client, accepted = pair
    accepted.sendall(b"x" * 1000)
    assert client.recv(1000)
    monkeypatch.setattr(_sockets.sys, "platform", "darwin")
    assert bytes_acked(accepted) is None


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux's tcp_info layout")
def test_on_linux_the_acknowledged_bytes_grow_as_the_peer_reads(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    client, accepted = pair
    before = bytes_acked(accepted)
    assert before is not None
    accepted.sendall(b"x" * 1000)
    got = 0
    while got < 1000:
        got += len(client.recv(1000))
    deadline = time.monotonic() + 10.0  # a hang guard: the ACK may trail the read
    while (bytes_acked(accepted) or 0) < before + 1000 and time.monotonic() < deadline:
        time.sleep(0.001)
    assert (bytes_acked(accepted) or 0) >= before + 1000
