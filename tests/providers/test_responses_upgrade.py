"""The Responses upgrade: classified from the error body, retried once, remembered per model."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import msgspec
import pytest
from fake_provider import FakeProvider
from shell_runner import FAST, SHELLS, collect, run

from streamfn.core import Done, Error, ErrorKind, Model, replay
from streamfn.core._classify import classify_http_error
from streamfn.core.stages._responses_upgrade import needs_responses_api, responses_model

OPENAI_400 = {
    "error": {
        "message": "This model is only supported in v1/responses and not in v1/chat/completions.",
        "type": "invalid_request_error",
        "param": "model",
        "code": None,
    }
}


def http_error(status: int, message: str) -> Error:
    body = json.dumps({"error": {"message": message, "type": "invalid_request_error"}})
    return classify_http_error(status, [], body.encode(), provider="openai")


def test_the_openai_400_body_is_classified_as_needing_responses() -> None:
    error = classify_http_error(400, [], json.dumps(OPENAI_400).encode(), provider="openai")
    assert error.kind == ErrorKind.INVALID_REQUEST and needs_responses_api(error)
    gateway = "Unsupported legacy protocol: /v1/chat/completions is not supported. Please use /v1/responses."
    assert needs_responses_api(http_error(400, gateway))
    assert needs_responses_api(http_error(404, OPENAI_400["error"]["message"]))  # type: ignore[index]


@pytest.mark.parametrize(
    ("status", "message"),
    [
        (400, "Unsupported parameter: 'max_tokens' is not supported with this model."),
        (
            400,
            "Unsupported parameter: `messages`. In the Responses API, this parameter has moved to `input`.",
        ),
        (400, "This model's maximum context length is 8192 tokens."),
        (403, "This model is only supported in v1/responses and not in v1/chat/completions."),
        (500, "This model is only supported in v1/responses and not in v1/chat/completions."),
    ],
)
def test_other_errors_are_not_an_upgrade(status: int, message: str) -> None:
    assert not needs_responses_api(http_error(status, message))
    in_stream = Error.invalid_request(message)  # no HTTP status: not the 400 we look for
    assert not needs_responses_api(in_stream)


@pytest.fixture(scope="module")
def server() -> Iterator[FakeProvider]:
    with FakeProvider() as fake:
        yield fake


def chat_model(server: FakeProvider, fault: str, token: str) -> Model:
    return Model(
        id="o1-pro",
        provider="openai",
        api="openai-chat",
        base_url=server.base_url(fault, "openai-chat", token),
    )


def paths(server: FakeProvider, token: str) -> list[str]:
    return [r.path.rsplit("/", 1)[-1] for r in server.requests if f"/{token}/" in r.path]


@pytest.mark.parametrize("shell", SHELLS)
def test_the_shell_retries_once_on_responses_and_remembers_the_model(
    server: FakeProvider, shell: str
) -> None:
    token = f"upgrade-{shell}"
    model = chat_model(server, "responses-only", token)

    async def twice(client: Any) -> tuple[list[Any], list[Any], int]:
        first = await collect(client, model)
        second = await collect(client, model)
        return first, second, len(client.responses_upgraded)

    first, second, remembered = run(shell, twice)
    expected = replay(
        "openai-responses",
        server.body_for("openai-responses"),
        model=responses_model(model),
        headers=[("content-type", "text/event-stream")],
    )
    assert first == expected and second == expected
    assert isinstance(first[-1], Done) and first[0].api == "openai-responses"  # type: ignore[union-attr]
    # the bill: one refused chat request, then the Responses API only
    assert paths(server, token) == ["completions", "responses", "responses"]
    assert remembered == 1
    # a new client has not learnt it yet: one refused request again, then the upgrade
    run(shell, collect, model)
    assert paths(server, token)[3:] == ["completions", "responses"]


def test_any_other_400_reaches_the_caller_after_one_request(server: FakeProvider) -> None:
    model = chat_model(server, "400-context", "no-upgrade")
    events = run("asyncio", collect, model, FAST)
    assert isinstance(events[-1], Error) and events[-1].kind == ErrorKind.CONTEXT_OVERFLOW
    assert paths(server, "no-upgrade") == ["completions"]


@pytest.mark.parametrize("shell", SHELLS)
def test_a_third_party_server_saying_the_words_switches_nothing(
    server: FakeProvider, shell: str
) -> None:
    """Only OpenAI and Azure serve the Responses API: a vLLM or Groq 400 that happens to
    (or is made to) quote the sentence is just that request's error, for one request."""
    token = f"third-party-{shell}"
    model = msgspec.structs.replace(chat_model(server, "responses-only", token), provider="groq")
    events = run(shell, collect, model)
    assert isinstance(events[-1], Error) and events[-1].status == 400
    assert paths(server, token) == ["completions"]
