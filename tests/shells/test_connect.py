"""How the shells open a connection: an IP literal goes straight to ``connect``.

A literal has one address and needs no resolver; trio's `open_tcp_stream`
(getaddrinfo plus a happy-eyeballs nursery) cost more than the rest of a
loopback request. A name still goes through the resolver.
"""

from __future__ import annotations

import errno
import os
import socket
import subprocess
import sys
from typing import Any

import pytest
from fake_provider import FakeProvider
from shell_runner import SHELLS, collect, run

from streamfn.core import Done, Error, ErrorKind, Model, Options
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


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize("shell", SHELLS)
def test_a_refused_connect_says_it_once_in_every_shell(shell: str) -> None:
    """The OS's reason, not each event loop's sentence around it: asyncio's "Connect
    call failed ('127.0.0.1', N)" and trio's "Error connecting to ('127.0.0.1', N)"
    repeated the address the message already names."""
    port = _closed_port()
    model = Model(id="m", provider="openai", api="openai-chat", base_url=f"http://127.0.0.1:{port}")
    error = run(shell, collect, model, Options(api_key="k", max_attempts=1))[-1]
    assert isinstance(error, Error) and error.kind is ErrorKind.NETWORK
    reason = os.strerror(errno.ECONNREFUSED)
    assert (
        error.message
        == f"connect to 127.0.0.1:{port} failed: [Errno {errno.ECONNREFUSED}] {reason}"
    )


@pytest.mark.parametrize("shell", SHELLS)
def test_a_name_that_does_not_resolve_says_so_and_what_to_check(
    shell: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = socket.getaddrinfo

    def resolver(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host == "nosuch.invalid":
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", resolver)
    model = Model(id="m", provider="openai", api="openai-chat", base_url="http://nosuch.invalid")
    error = run(shell, collect, model, Options(api_key="k", max_attempts=1))[-1]
    assert isinstance(error, Error) and error.kind is ErrorKind.NETWORK
    assert error.message.startswith(
        "cannot resolve the host name 'nosuch.invalid' (Name or service not known): check"
    ), error.message
    assert "base URL" in error.message and "DNS" in error.message


def test_the_library_is_quiet_unless_its_program_configures_logging() -> None:
    """Retry warnings reach stderr only through a handler the program set (the library
    has a NullHandler); with ``logging.basicConfig`` they show, so this is not vacuous."""
    program = (
        "import logging, sys\n"
        "from streamfn.core import Context, Model, Options\n"
        "from streamfn.io_sync import stream\n"
        "if sys.argv[1] == 'configured':\n"
        "    logging.basicConfig()\n"
        f"model = Model(id='m', provider='openai', api='openai-chat', "
        f"base_url='http://127.0.0.1:{_closed_port()}')\n"
        "options = Options(api_key='k', max_attempts=2, retry_base_delay=0.01)\n"
        "with stream(model, Context.of('hi'), options) as events:\n"
        "    print(type(list(events)[-1]).__name__)\n"
    )
    said = {}
    for mode in ("bare", "configured"):
        done = subprocess.run(
            [sys.executable, "-c", program, mode],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        assert done.stdout == "Error\n"
        said[mode] = done.stderr
    assert said["bare"] == ""
    assert "attempt 1 failed" in said["configured"]
