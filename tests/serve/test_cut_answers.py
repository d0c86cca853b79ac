"""A cut answer is never a complete answer: non-streaming requests against an upstream
that fails after output began (a reset, a clean close mid-body, a malformed or
unfinished event, a stall past the idle timeout, a line over the content cap).

Nothing has been sent to the client of a ``"stream": false`` request when the
upstream breaks, so the answer is an HTTP error in the client's own error shape
(502, or 504 for a timeout), read here by the official openai and anthropic SDKs
and by a raw socket; never 200 with ``finish_reason: "stop"`` / ``stop_reason:
"end_turn"``, never a tool call whose cut arguments were repaired into valid input.
"""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator

import anthropic
import openai
import pytest
from cut_bodies import CUT_PATH, output_first, text_body, tool_body
from fake_provider import FakeProvider
from loopback_server import KEY, Server, provider_backend, raw_post, read_all

from streamfn.asgi import App, ServerConfig
from streamfn.asgi._backends import ServedModel
from streamfn.core import Done, Options, Start, StopReason, TextDelta, TextEnd, TextStart
from streamfn.core.catalogue._models import openai_compatible
from streamfn.fuzz._events_backend import EventsBackend

# every test here runs on both shells (tests/serve/conftest.py)
pytestmark = pytest.mark.usefixtures("shell")

USER = [{"role": "user", "content": "tidy my home directory"}]


#: fault -> the status a non-streaming client gets
FAULTS = {
    "reset": 502,  # half the body, then a TCP reset
    "truncated": 502,  # half the body, then a clean close inside the chunked body
    "no-terminal": 502,  # a well-framed body that stops mid-event
    "oversized": 502,  # a line past the content cap
    "stall-mid": 504,  # half the body, then silence past the idle timeout
}


@pytest.fixture(scope="module")
def upstream() -> Iterator[FakeProvider]:
    with FakeProvider(stall=5.0) as fake:
        yield fake


@pytest.fixture(scope="module")
def gateway(upstream: FakeProvider) -> Iterator[Server]:
    served = [
        ServedModel(
            name=f"{kind}-{fault}",
            # `oversized` cuts after the first event: one that carries output
            model=openai_compatible(
                "m",
                upstream.serve(output_first(body) if fault == "oversized" else body, fault=fault),
            ),
            defaults=Options(idle_timeout=0.5, max_attempts=1),
        )
        for kind, body in (("tool", tool_body()), ("text", text_body()))
        for fault in FAULTS
    ]
    backend = provider_backend(served=served, registry=False)
    with Server(App(backend, ServerConfig(api_key=KEY))) as server:
        yield server


def _post(server: Server, path: str, body: dict[str, object]) -> tuple[int, dict[str, object]]:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        headers = {"authorization": f"Bearer {KEY}", "content-type": "application/json"}
        conn.request("POST", path, json.dumps(body), headers)
        response = conn.getresponse()
        return response.status, json.loads(response.read())
    finally:
        conn.close()


def _no_success_word(reply: dict[str, object]) -> None:
    text = json.dumps(reply)
    for word in ('"finish_reason"', '"stop_reason"', "end_turn", "tool_calls", '"tool_use"'):
        assert word not in text, text
    assert CUT_PATH not in text, text  # neither repaired nor raw partial input


@pytest.mark.parametrize("kind", ["tool", "text"])
@pytest.mark.parametrize("fault", list(FAULTS))
def test_a_non_streaming_chat_completion_cut_by_the_upstream_is_an_http_error(
    gateway: Server, kind: str, fault: str
) -> None:
    body = {"model": f"{kind}-{fault}", "messages": USER, "stream": False}
    status, reply = _post(gateway, "/v1/chat/completions", body)
    assert status == FAULTS[fault], reply
    error = reply["error"]
    assert isinstance(error, dict) and set(error) == {"message", "type", "code"}
    assert error["message"]
    _no_success_word(reply)


@pytest.mark.parametrize("kind", ["tool", "text"])
@pytest.mark.parametrize("fault", list(FAULTS))
def test_a_non_streaming_anthropic_message_cut_by_the_upstream_is_an_http_error(
    gateway: Server, kind: str, fault: str
) -> None:
    body = {"model": f"{kind}-{fault}", "messages": USER, "max_tokens": 100}
    status, reply = _post(gateway, "/v1/messages", body)
    assert status == FAULTS[fault], reply
    assert reply["type"] == "error"
    error = reply["error"]
    assert isinstance(error, dict) and error["type"] and error["message"]
    _no_success_word(reply)


def test_the_official_sdks_raise_on_a_cut_answer_instead_of_returning_it(gateway: Server) -> None:
    with (
        openai.OpenAI(base_url=gateway.url + "/v1", api_key=KEY, max_retries=0) as oa,
        pytest.raises(openai.InternalServerError) as oa_info,
    ):
        oa.chat.completions.create(model="tool-reset", messages=USER)  # type: ignore[arg-type]
    assert oa_info.value.status_code == 502
    with (
        anthropic.Anthropic(base_url=gateway.url, api_key=KEY, max_retries=0) as an,
        pytest.raises(anthropic.APIStatusError) as an_info,
    ):
        an.messages.create(model="tool-stall-mid", max_tokens=100, messages=USER)  # type: ignore[arg-type]
    assert an_info.value.status_code == 504


@pytest.mark.parametrize("stop", [StopReason.ERROR, StopReason.ABORTED])
def test_a_backend_done_that_says_the_answer_did_not_finish_is_no_success(
    stop: StopReason,
) -> None:
    """A backend's `Done` with stop reason error/aborted: an HTTP error when nothing was
    sent, the dialect's error event in a stream; never "stop" / "end_turn"."""
    events = [Start(), TextStart(0), TextDelta(0, "partial"), TextEnd(0), Done(stop_reason=stop)]
    with Server(App(EventsBackend({"m": events}), ServerConfig(api_key=KEY))) as server:
        status, reply = _post(server, "/v1/chat/completions", {"model": "m", "messages": USER})
        assert status == 502, reply
        _no_success_word(reply)
        status, reply = _post(
            server, "/v1/messages", {"model": "m", "messages": USER, "max_tokens": 10}
        )
        assert status == 502 and reply["type"] == "error", reply
        _no_success_word(reply)
        body = {"model": "m", "messages": USER, "stream": True}
        with raw_post(server.port, "/v1/chat/completions", json.dumps(body).encode()) as sock:
            raw = read_all(sock, 30)
        assert b'"error"' in raw and b'"finish_reason":"stop"' not in raw, raw
        body = {"model": "m", "messages": USER, "max_tokens": 10, "stream": True}
        with raw_post(server.port, "/v1/messages", json.dumps(body).encode()) as sock:
            raw = read_all(sock, 30)
        assert b"event: error" in raw and b"end_turn" not in raw, raw


@pytest.mark.parametrize("stop", [StopReason.ERROR, StopReason.ABORTED])
def test_front_end_streams_end_a_done_that_did_not_finish_with_their_error_event(
    stop: StopReason,
) -> None:
    """The UI message stream and AG-UI routes: a backend's `Done` with stop reason
    error/aborted ends in ``error`` / ``RUN_ERROR``, never ``finish`` / ``RUN_FINISHED``."""
    events = [Start(), TextStart(0), TextDelta(0, "partial"), TextEnd(0), Done(stop_reason=stop)]
    backend = EventsBackend({"m": events})
    with Server(App(backend, ServerConfig(api_key=KEY, head_wait=0))) as server:
        ui = {
            "id": "c",
            "model": "m",
            "messages": [{"role": "user", "parts": [{"type": "text", "text": "hi"}]}],
        }
        with raw_post(server.port, "/v1/ui/chat", json.dumps(ui).encode()) as sock:
            raw = read_all(sock, 30)
        assert b'"type":"error"' in raw and b'"type":"finish"' not in raw, raw
        agui = {
            "threadId": "t",
            "runId": "r",
            "messages": [{"id": "1", "role": "user", "content": "hi"}],
            "forwardedProps": {"model": "m"},
        }
        with raw_post(server.port, "/v1/agui", json.dumps(agui).encode()) as sock:
            raw = read_all(sock, 30)
        assert b"RUN_ERROR" in raw and b"RUN_FINISHED" not in raw, raw
