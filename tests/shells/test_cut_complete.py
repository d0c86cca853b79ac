"""`complete()` on every shell when the upstream cuts the answer after output began: it
raises `CompletionError`, and the partial message it carries (or returns, with
``raise_on_error=False``) never offers a cut tool call's repaired arguments as input."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from cut_bodies import CUT_PATH, text_body, tool_body
from fake_provider import FakeProvider
from shell_runner import FAST, SHELLS, run

from streamfn.core import CompletionError, Context, ErrorKind, StopReason
from streamfn.core.catalogue._models import openai_compatible


@pytest.fixture(params=SHELLS)
def shell(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def upstream() -> Iterator[FakeProvider]:
    with FakeProvider(stall=2.0) as fake:
        yield fake


@pytest.mark.parametrize("fault", ["reset", "truncated", "no-terminal"])
def test_complete_raises_on_a_cut_tool_call_and_keeps_only_its_raw_text(
    shell: str, upstream: FakeProvider, fault: str
) -> None:
    model = openai_compatible("m", upstream.serve(tool_body(), fault=fault))

    async def go(client: Any) -> Any:
        with pytest.raises(CompletionError) as info:
            await client.complete(model, Context.of("hi"), FAST)
        returned = await client.complete(model, Context.of("hi"), FAST, raise_on_error=False)
        return info.value, returned

    error, returned = run(shell, go)
    assert error.kind is ErrorKind.NETWORK or error.kind is ErrorKind.PROTOCOL
    for message in (error.message, returned):
        assert message.stop_reason is StopReason.ERROR
        (call,) = message.tool_calls
        assert call.name == "delete_files"
        assert call.arguments == {}  # not {"path": "/home/user/x/x..."}
        assert call.arguments_json.startswith('{"path": "' + CUT_PATH)
        assert call.parse_error is not None and "must not be used" in call.parse_error


def test_complete_raises_on_cut_text(shell: str, upstream: FakeProvider) -> None:
    model = openai_compatible("m", upstream.serve(text_body(), fault="reset"))

    async def go(client: Any) -> Any:
        with pytest.raises(CompletionError) as info:
            await client.complete(model, Context.of("hi"), FAST)
        return info.value

    error = run(shell, go)
    assert error.message.text.startswith("word0 ")
    assert error.message.stop_reason is StopReason.ERROR
