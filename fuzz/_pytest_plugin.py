"""The pytest plugin of `streamfn.fuzz`: a ``fake_provider`` fixture.

Installed with streamfn (entry point ``pytest11``), so any test can take the
fixture: a started `FakeProvider` on loopback, closed after the test.

    def test_my_agent_survives_a_reset(fake_provider):
        url = fake_provider.base_url("reset", "openai-chat")
        model = openai_compatible("m", url)
        ...

Only the standard library is imported here, so the plugin costs nothing in
projects that never use it (hypothesis is not needed for the fixture).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ._fake_provider import FakeProvider

__all__ = ["fake_provider"]


@pytest.fixture
def fake_provider() -> Iterator[FakeProvider]:
    """A loopback `FakeProvider` for one test (plain HTTP; stalls last 5 s at most)."""
    with FakeProvider() as server:
        yield server
