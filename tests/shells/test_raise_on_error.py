"""A failed stream can be made loud: ``stream(..., raise_on_error=True)`` in every shell,
`raise_for_error` on the sans-I/O path, one rule (`streamfn.core._completion`).

Each shell's module-level ``stream`` is pointed at the loopback fake provider: a 401
raises `StreamError` (kind ``auth``) instead of ending the loop quietly, a connection
reset mid-body hands over the text that came first and then raises, and a good
stream is unchanged. Without the flag the `Error` is the last event, as before.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import trio
from fake_provider import FakeProvider

from streamfn.core import (
    CompletionError,
    Context,
    Done,
    Error,
    ErrorKind,
    Event,
    Model,
    Options,
    StreamError,
    TextDelta,
    open_call,
    raise_for_error,
    replay,
)
from streamfn.io_asyncio import stream as asyncio_stream
from streamfn.io_sync import stream as sync_stream
from streamfn.io_trio import stream as trio_stream

OPTIONS = Options(
    api_key="sk-test", max_attempts=1, connect_timeout=2, first_byte_timeout=2, idle_timeout=2
)


def _model(url: str) -> Model:
    return Model(id="gpt-4o-mini", provider="openai", api="openai-chat", base_url=url)


def _collect(shell: str, url: str, **kwargs: Any) -> list[Event]:
    """Every event a shell's module-level ``stream`` hands out (an exception propagates)."""
    model, context = _model(url), Context.of("Hi")
    if shell == "sync":
        with sync_stream(model, context, OPTIONS, **kwargs) as events:
            return list(events)

    async def run(stream: Any) -> list[Event]:
        async with stream(model, context, OPTIONS, **kwargs) as events:
            return [event async for event in events]

    if shell == "trio":
        result: list[Event] = trio.run(run, trio_stream)
        return result
    return asyncio.run(run(asyncio_stream))


def _seen(shell: str, url: str) -> tuple[list[Event], StreamError]:
    """The events handed out before ``raise_on_error=True`` raised, and the exception."""
    seen: list[Event] = []
    model, context = _model(url), Context.of("Hi")
    with pytest.raises(StreamError) as caught:
        if shell == "sync":
            with sync_stream(model, context, OPTIONS, raise_on_error=True) as events:
                seen.extend(events)
        else:

            async def run(stream: Any) -> None:
                async with stream(model, context, OPTIONS, raise_on_error=True) as events:
                    async for event in events:
                        seen.append(event)

            if shell == "trio":
                trio.run(run, trio_stream)
            else:
                asyncio.run(run(asyncio_stream))
    return seen, caught.value


@pytest.fixture(scope="module")
def fake() -> Any:
    with FakeProvider() as server:
        yield server


SHELLS = ["trio", "asyncio", "sync"]


@pytest.mark.parametrize("shell", SHELLS)
def test_an_auth_failure_raises_instead_of_ending_quietly(shell: str, fake: Any) -> None:
    url = fake.base_url("401", "openai-chat")
    quiet = _collect(shell, url)  # the default: the Error is the last event
    assert isinstance(quiet[-1], Error) and quiet[-1].kind is ErrorKind.AUTH
    seen, exc = _seen(shell, url)
    assert not any(isinstance(e, Error) for e in seen)  # raised in its place
    assert exc.kind is ErrorKind.AUTH and exc.error.status == 401
    assert "auth" in str(exc)


@pytest.mark.parametrize("shell", SHELLS)
def test_a_drop_mid_body_hands_over_the_text_then_raises(shell: str, fake: Any) -> None:
    seen, exc = _seen(shell, fake.base_url("reset", "openai-chat"))
    assert any(isinstance(e, TextDelta) for e in seen)
    assert exc.kind is ErrorKind.NETWORK


@pytest.mark.parametrize("shell", SHELLS)
def test_a_good_stream_is_unchanged(shell: str, fake: Any) -> None:
    url = fake.base_url("ok", "openai-chat")
    loud = _collect(shell, url, raise_on_error=True)
    assert isinstance(loud[-1], Done)
    assert [type(e) for e in loud] == [type(e) for e in _collect(shell, url)]


def test_raise_for_error_on_the_sans_io_path() -> None:
    call = open_call(_model("http://127.0.0.1:9"), Context.of("Hi"), OPTIONS)
    body = b'{"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}}'
    batch = call.receive_response(401, [(b"content-type", b"application/json")])
    batch += call.receive_data(body) + call.receive_eof()
    with pytest.raises(StreamError) as caught:
        raise_for_error(batch)
    assert caught.value.kind is ErrorKind.AUTH
    with pytest.raises(StreamError):
        raise_for_error(batch[-1])  # one event at a time works too
    good = replay("openai-chat", b'data: {"choices": [{"delta": {"content": "Hi"}}]}\n\n')
    raise_for_error(good[:-1])  # no Error at the end: nothing happens
    raise_for_error([])
    assert all(raise_for_error(e) is None for e in good if not isinstance(e, Error))


def test_complete_raises_the_same_family() -> None:
    assert issubclass(CompletionError, StreamError)
