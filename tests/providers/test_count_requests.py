"""Every token-counting request is one its endpoint accepts, checked by oracles we did not
write: the anthropic SDK's ``MessageCountTokensParams``, the openai SDK's
``InputTokenCountParams``, google-genai's types inside ``generateContentRequest``, and
botocore's ``CountTokens`` shape; over the same conversations, thinking levels and tool
choices as the message requests (`test_request_conformance`)."""

from __future__ import annotations

import functools
import itertools
import json
import logging
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from request_oracles import _gemini, _stand_in_ids, _typed_dict_checker
from test_request_conformance import TARGETS, THINKING, all_contexts
from test_sigv4 import _botocore_sign

from streamfn.core import (
    AWSCredentials,
    Context,
    Model,
    Options,
    TokenCountUnsupported,
    get_model,
    open_count,
)
from streamfn.core._count import counting_for

Body = dict[str, Any]


@functools.cache
def _anthropic() -> Callable[[Body], list[str]]:
    from anthropic.types.message_count_tokens_params import MessageCountTokensParams

    return _typed_dict_checker(MessageCountTokensParams)


@functools.cache
def _openai() -> Callable[[Body], list[str]]:
    from openai.types.responses.input_token_count_params import InputTokenCountParams

    check = _typed_dict_checker(InputTokenCountParams, ("input", "tools"))
    # replayed output items travel without their id, as in the message request (see
    # `_stand_in_ids`): a stand-in id is put back so the rest of each item is checked
    return lambda body: check(
        {k: v for k, v in _stand_in_ids({**body, "store": False}).items() if k != "store"}
    )


@functools.cache
def _bedrock() -> Callable[[Body], list[str]]:
    import botocore.session
    from botocore.validate import ParamValidator

    service = botocore.session.get_session().get_service_model("bedrock-runtime")
    shape = service.operation_model("CountTokens").input_shape
    validator = ParamValidator()

    def check(body: Body) -> list[str]:
        report = validator.validate(body, shape)
        return [report.generate_report()] if report.has_errors() else []

    return check


def count_errors(model: Model, url: str, body: Body) -> list[str]:
    """Why the counting endpoint would refuse ``body`` (nothing: it takes it)."""
    if model.api == "anthropic":
        assert url.endswith("/messages/count_tokens"), url
        return _anthropic()(body)
    if model.api in ("openai-responses", "openai-chat"):
        assert url.endswith("/responses/input_tokens"), url
        return _openai()(body)
    if model.api == "gemini":
        assert url.endswith(f"/models/{model.id}:countTokens"), url
        request = dict(body["generateContentRequest"])
        assert request.pop("model") == f"models/{model.id}"
        return _gemini()(request)
    assert model.api == "bedrock"
    assert url.endswith("/count-tokens"), url
    return _bedrock()({"modelId": model.id, **body})


COUNTED = [m for m in TARGETS if counting_for(m) is not None]


def _options(thinking: Options, choice: str | None) -> Options:
    return Options(
        api_key="k",
        thinking=thinking.thinking,
        thinking_budget=thinking.thinking_budget,
        tool_choice=choice,
        max_tokens=1000,
        temperature=0.5,
    )


@pytest.mark.parametrize("target", COUNTED, ids=lambda m: f"{m.api}-{m.provider}-{m.id}")
def test_every_counting_body_is_accepted(target: Model, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR, logger="streamfn")  # the remedies' warnings are expected
    failures: list[str] = []
    count = 0
    for (name, context), thinking, choice in itertools.product(
        all_contexts(target).items(), THINKING, [None, "required", "weather"]
    ):
        request = open_count(target, context, _options(thinking, choice)).request
        count += 1
        body = json.loads(request.body)
        failures += [
            f"{name} | {thinking!r} {choice}: {e}" for e in count_errors(target, request.url, body)
        ]
    assert not failures, f"{len(failures)} of {count} bodies refused:\n" + "\n".join(failures[:10])


def test_the_oracles_refuse_what_the_endpoints_refuse() -> None:
    """Each oracle refuses a generation-only field, so the test above can fail."""
    by_api = {m.api: m for m in COUNTED}
    refused = {
        "anthropic": {"model": "m", "messages": [], "max_tokens": 10},
        "openai-responses": {"model": "m", "input": [], "stream": True},
        "gemini": {"generateContentRequest": {"model": "models/m", "contents": [], "stream": 1}},
        "bedrock": {"input": {"converse": {"messages": [], "inferenceConfig": {}}}},
    }
    for api, body in refused.items():
        model = by_api[api]
        url = open_count(model, Context.of("hi"), Options(api_key="k")).request.url
        if api == "gemini":
            body["generateContentRequest"]["model"] = f"models/{model.id}"
        assert count_errors(model, url, body), api


def test_the_count_is_the_message_request_trimmed() -> None:
    """Same headers (key, API version), a JSON answer asked for, the same conversation."""
    model = get_model("anthropic:claude-sonnet-4-6")
    context = Context.of("Why is the sky blue?", system_prompt="Be brief.")
    request = open_count(model, context, Options(api_key="sk-ant-k", max_tokens=50)).request
    headers = dict(request.headers)
    assert headers["x-api-key"] == "sk-ant-k" and headers["anthropic-version"]
    assert headers["accept"] == "application/json"
    assert json.loads(request.body) == {
        "model": "claude-sonnet-4-6",
        "system": "Be brief.",
        "messages": [{"role": "user", "content": "Why is the sky blue?"}],
    }


def test_openai_compatible_servers_have_no_counting_endpoint() -> None:
    for name in (
        "groq:llama-3.3-70b-versatile",
        "deepseek:deepseek-chat",
        "mistral:mistral-large-latest",
    ):
        with pytest.raises(TokenCountUnsupported, match="estimate=True"):
            open_count(get_model(name), Context.of("hi"), Options(api_key="k"))
    assert counting_for(get_model("openai:gpt-4o")) is not None
    azure = Model(
        id="gpt-4o", provider="azure", api="openai-chat", base_url="https://r.openai.azure.com"
    )
    assert counting_for(azure) is None


def test_bedrock_counts_are_signed_like_botocore_signs_them() -> None:
    """The SigV4 signature of the counting request, against botocore's signer."""
    model = get_model("bedrock:us.anthropic.claude-sonnet-4-5-20250929-v1:0")
    secret = AWSCredentials(access_key_id="AKIDEXAMPLE", secret_access_key="wJalrXUtnFEMI/K7MDENG")
    options = Options(aws_credentials=secret)
    call = open_count(model, Context.of("hi"), options)
    at = datetime(2026, 11, 28, 12, 0, 0, tzinfo=UTC)
    unsigned = call.request
    signed = dict(call.sign(at).headers)
    theirs, _ = _botocore_sign(
        method="POST",
        url=unsigned.url,
        headers=dict(unsigned.headers),
        body=unsigned.body,
        region="us-east-1",
        service="bedrock",
        access_key="AKIDEXAMPLE",
        secret_key="wJalrXUtnFEMI/K7MDENG",
        session_token=None,
        timestamp=at,
    )
    assert unsigned.url.endswith(
        "/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/count-tokens"
    )
    assert signed["Authorization"] == dict(theirs)["Authorization"]
