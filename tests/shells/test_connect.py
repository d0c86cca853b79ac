"""How the shells open a connection: an IP literal goes straight to ``connect``.

A literal has one address and needs no resolver; trio's `open_tcp_stream`
(getaddrinfo plus a happy-eyeballs nursery) cost more than the rest of a
loopback request. A name still goes through the resolver.
"""

from __future__ import annotations

import socket
from typing import Any

import pytest
from fake_provider import FakeProvider
from shell_runner import SHELLS, collect, run

from streamfn.core import Done, Model
from streamfn.io_common._sockets import literal_family


def test_literal_family_names_only_ip_literals() -> None:
    assert literal_family("127.0.0.1") == socket.AF_INET
    assert literal_family("::1") == socket.AF_INET6
    assert literal_family("localhost") is None
    assert literal_family("api.openai.com") is None
    assert literal_family("fe80::1%eth0") is None  # scoped: left to the resolver
    assert literal_family("1.2.3") is None  # inet_aton would take it; getaddrinfo decides


@pytest.mark.parametrize("shell", SHELLS)
@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_an_ip_literal_skips_the_resolver_and_a_name_uses_it(
    shell: str, host: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    lookups: list[object] = []
    real = socket.getaddrinfo

    def counted(*args: Any, **kwargs: Any) -> Any:
        lookups.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", counted)
    with FakeProvider() as server:
        url = server.base_url("ok", "openai-chat").replace("127.0.0.1", host)
        model = Model(id="m", provider="openai", api="openai-chat", base_url=url)
        events = run(shell, collect, model)
    assert isinstance(events[-1], Done), events[-1]
    if host == "localhost":
        assert "localhost" in lookups
    else:
        assert host not in lookups
