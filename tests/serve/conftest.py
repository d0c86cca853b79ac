"""The server's tests run on both shells: the ``shell`` fixture picks the one
`test_server.Server` (and `test_server.provider_backend`) uses."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import test_server


@pytest.fixture(scope="module", params=["asyncio", "trio"])
def shell(request: pytest.FixtureRequest) -> Iterator[str]:
    test_server.SHELL[0] = request.param
    yield request.param
    test_server.SHELL[0] = "asyncio"
