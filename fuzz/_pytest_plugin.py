"""The pytest plugin of `streamfn.fuzz`: the ``fake_provider`` and
``shared_fake_provider`` fixtures.

Installed with streamfn (entry point ``pytest11``), so any test can take them:
a started `FakeProvider` on loopback, closed after the test (``fake_provider``)
or after the session (``shared_fake_provider``).

    from streamfn.core import Context, Error, Model, Options
    from streamfn.io_sync import stream

    def test_my_agent_survives_a_reset(fake_provider):
        url = fake_provider.base_url("reset", "openai-chat")
        model = Model(id="m", provider="openai", api="openai-chat", base_url=url)
        with stream(model, Context.of("Hi"), Options(api_key="k", max_attempts=1)) as events:
            assert isinstance(list(events)[-1], Error)

A ``@given`` test runs many examples in one call of the test, so Hypothesis
refuses a function-scoped fixture there (its health check: the fixture is not
reset between examples). Take ``shared_fake_provider`` instead: one server for
the session, where each ``serve()`` gives the example a base URL of its own, so
examples (and tests) do not see each other's bodies or faults.

    from hypothesis import given
    from streamfn.fuzz import faults, transcripts

    @given(transcripts("anthropic"), faults("ok", "drop"))
    def test_my_agent_on_any_transcript(shared_fake_provider, t, fault):
        url = shared_fake_provider.serve(t.body, t.content_type, fault=fault)
        ...

Only the standard library is imported here, so the plugin costs nothing in
projects that never use it (hypothesis is not needed for the fixtures).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ._fake_provider import FakeProvider

__all__ = ["fake_provider", "shared_fake_provider"]


@pytest.fixture
def fake_provider() -> Iterator[FakeProvider]:
    """A loopback `FakeProvider` for one test (plain HTTP; stalls last 5 s at most).

    Not for a ``@given`` test: use `shared_fake_provider` there."""
    with FakeProvider() as server:
        yield server


@pytest.fixture(scope="session")
def shared_fake_provider() -> Iterator[FakeProvider]:
    """One loopback `FakeProvider` for the whole session, for ``@given`` tests: give
    each example its own base URL with ``serve()`` (its counts are the session's)."""
    with FakeProvider() as server:
        yield server
