"""The server's tests run on both shells: the ``shell`` fixture picks the one
`loopback_server.Server` (and `loopback_server.provider_backend`) uses."""

from __future__ import annotations

from collections.abc import Iterator

import loopback_server
import pytest
from fake_provider import FakeProvider


@pytest.fixture(scope="module", params=["asyncio", "trio"])
def shell(request: pytest.FixtureRequest) -> Iterator[str]:
    loopback_server.SHELL[0] = request.param
    yield request.param
    loopback_server.SHELL[0] = "asyncio"


@pytest.fixture(scope="module")
def fake_upstream() -> Iterator[FakeProvider]:
    """A loopback fake provider for one module's gateway to call."""
    with FakeProvider() as fake:
        yield fake
