"""``POST /v1/ui/chat`` and ``POST /v1/agui`` on a real hypercorn, read by the real clients.

The AI SDK's ``DefaultChatTransport`` and ``readUIMessageStream`` (the ``ai`` npm
package) and AG-UI's ``HttpAgent`` (``@ag-ui/client``) run under node when both
are installed (`.ci/run` installs them when node is there; ``STREAMFN_NODE_DIR``
names the folder holding their ``node_modules``); AG-UI's Python types
(``ag-ui-protocol``, a test dependency) build the request and parse every event
either way.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from loopback_server import KEY, Server, raw_post, read_all, serving
from missing import missing

# every test here runs on both shells (tests/serve/conftest.py)
pytestmark = pytest.mark.usefixtures("shell")

UI_CHAT_PATH = "/v1/ui/chat"
AGUI_PATH = "/v1/agui"
JS = Path(__file__).parent / "js"
NODE_DIR = Path(
    os.environ.get("STREAMFN_NODE_DIR", Path.home() / ".cache" / "streamfn-node-clients")
)


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    with serving(default_model="demo-text") as (srv, _):
        yield srv


class Response:
    def __init__(self, raw: bytes) -> None:
        head, _, body = raw.partition(b"\r\n\r\n")
        lines = head.decode().split("\r\n")
        self.status = int(lines[0].split()[1])
        self.headers = {k.lower(): v.strip() for k, v in (line.split(":", 1) for line in lines[1:])}
        if self.headers.get("transfer-encoding") == "chunked":
            body = _unchunk(body)
        self.body = body


def _unchunk(body: bytes) -> bytes:
    out = b""
    while body:
        size_line, _, rest = body.partition(b"\r\n")
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            return out
        out += rest[:size]
        body = rest[size + 2 :]
    return out


def post(server: Server, path: str, body: dict[str, Any] | bytes) -> Response:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    with raw_post(server.port, path, data) as sock:
        return Response(read_all(sock))


def sse_data(body: bytes) -> list[str]:
    return [line[6:] for line in body.decode().split("\n") if line.startswith("data: ")]


def ui_body(model: str | None = "demo-text", text: str = "hello", **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": "chat-1",
        "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": text}]}],
        "trigger": "submit-message",
        **extra,
    }
    if model is not None:
        body["model"] = model
    return body


# -- the UI message stream -----------------------------------------------------------


def test_ui_text_answer_is_the_documented_part_sequence_with_its_header(server: Server) -> None:
    response = post(server, UI_CHAT_PATH, ui_body())
    assert response.status == 200
    assert response.headers["x-vercel-ai-ui-message-stream"] == "v1"
    assert response.headers["content-type"].startswith("text/event-stream")
    data = sse_data(response.body)
    assert data[-1] == "[DONE]"
    parts = [json.loads(d) for d in data[:-1]]
    assert [p["type"] for p in parts] == [
        "start", "start-step", "text-start", "text-delta", "text-delta", "text-end",
        "finish-step", "finish",
    ]  # fmt: skip
    assert parts[0]["messageId"].startswith("msg-")
    assert "".join(p["delta"] for p in parts if p["type"] == "text-delta") == "Hello, wörld 🌍"
    assert parts[-1] == {"type": "finish", "finishReason": "stop"}


def test_ui_tool_call_streams_its_input_then_makes_it_available(server: Server) -> None:
    parts = [
        json.loads(d) for d in sse_data(post(server, UI_CHAT_PATH, ui_body("demo-tool")).body)[:-1]
    ]
    kinds = [p["type"] for p in parts]
    assert kinds[kinds.index("tool-input-start") :] == [
        "tool-input-start", "tool-input-delta", "tool-input-delta", "tool-input-available",
        "finish-step", "finish",
    ]  # fmt: skip
    start = parts[kinds.index("tool-input-start")]
    assert start == {
        "type": "tool-input-start",
        "toolCallId": "call_abc123",
        "toolName": "get_weather",
    }
    available = parts[kinds.index("tool-input-available")]
    assert available["input"] == {"city": "Paris", "units": "c"}
    assert parts[-1]["finishReason"] == "tool-calls"


def test_ui_error_after_output_is_an_error_part_never_a_finish(server: Server) -> None:
    data = sse_data(post(server, UI_CHAT_PATH, ui_body("demo-midstream")).body)
    parts = [json.loads(d) for d in data[:-1]]
    assert data[-1] == "[DONE]"
    assert parts[-1] == {"type": "error", "errorText": "upstream dropped the connection"}
    assert not any(p["type"] in ("finish", "finish-step") for p in parts)


def test_ui_error_before_output_is_an_http_error_in_the_route_shape(server: Server) -> None:
    response = post(server, UI_CHAT_PATH, ui_body("demo-overflow"))
    assert response.status == 400
    assert "prompt is too long" in json.loads(response.body)["error"]["message"]


def test_ui_model_defaults_to_the_servers_and_else_is_a_400(server: Server) -> None:
    assert post(server, UI_CHAT_PATH, ui_body(model=None)).status == 200
    with serving() as (bare, _):
        response = post(bare, UI_CHAT_PATH, ui_body(model=None))
    assert response.status == 400
    assert "--default-model" in json.loads(response.body)["error"]["message"]


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"base_url": "http://evil"}, "request.base_url"),
        ({"trigger": "resume"}, "request.trigger"),
        ({"messages": [{"id": "a", "role": "user", "parts": [{"type": "file", "mediaType": "image/png", "url": "http://10.0.0.1/x.png"}]}]}, "--allow-input-urls"),
        ({"messages": [{"id": "a", "role": "assistant", "parts": [{"type": "tool-get_weather", "toolCallId": "c1", "state": "input-available", "input": {}}]}]}, "has no output yet"),
        ({"maxOutputTokens": 0}, "request.maxOutputTokens"),
        ({"messages": [{"id": "a", "role": "wizard", "parts": []}]}, "messages[0].role"),
    ],
)  # fmt: skip
def test_ui_bad_bodies_are_400s_naming_the_field(
    server: Server, change: dict[str, Any], named: str
) -> None:
    response = post(server, UI_CHAT_PATH, {**ui_body(), **change})
    assert response.status == 400
    assert named in json.loads(response.body)["error"]["message"]


# -- AG-UI ----------------------------------------------------------------------------


def agui_input(model: str | None = "demo-text", **extra: Any) -> dict[str, Any]:
    from ag_ui.core import RunAgentInput, UserMessage

    run = RunAgentInput(
        thread_id="thread-1",
        run_id="run-1",
        state={"theme": "dark"},
        messages=[UserMessage(id="u1", role="user", content="hello")],
        tools=[],
        context=[],
        forwarded_props={"model": model} if model else {},
    )
    return {**run.model_dump(by_alias=True, exclude_none=True), **extra}


def agui_events(body: bytes) -> list[dict[str, Any]]:
    """Every event, parsed by AG-UI's own pydantic models, each field one they define."""
    from ag_ui.core import Event
    from pydantic import TypeAdapter

    adapter: TypeAdapter[Any] = TypeAdapter(Event)
    events = []
    for data in sse_data(body):
        raw = json.loads(data)
        model = adapter.validate_python(raw)
        known = {f.alias or name for name, f in type(model).model_fields.items()}
        assert set(raw) <= known, (
            f"{raw['type']} has fields AG-UI does not define: {set(raw) - known}"
        )
        events.append(raw)
    return events


def test_agui_thinking_answer_parses_with_the_protocols_own_types(server: Server) -> None:
    response = post(server, AGUI_PATH, agui_input("demo-thinking"))
    assert response.status == 200
    events = agui_events(response.body)
    assert [e["type"] for e in events] == [
        "RUN_STARTED", "REASONING_START", "REASONING_MESSAGE_START",
        "REASONING_MESSAGE_CONTENT", "REASONING_MESSAGE_CONTENT", "REASONING_ENCRYPTED_VALUE",
        "REASONING_MESSAGE_END", "REASONING_END",
        "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "RUN_FINISHED",
    ]  # fmt: skip
    assert events[0] == {"type": "RUN_STARTED", "threadId": "thread-1", "runId": "run-1"}
    finished = events[-1]
    assert (finished["threadId"], finished["runId"]) == ("thread-1", "run-1")
    assert finished["outcome"] == {"type": "success"}
    assert finished["usage"][0]["outputTokens"] == 15
    assert finished["usage"][0]["reasoningTokens"] == 10


def test_agui_tool_call_names_its_parent_and_is_pending_at_the_end(server: Server) -> None:
    events = agui_events(post(server, AGUI_PATH, agui_input("demo-tool")).body)
    start = next(e for e in events if e["type"] == "TOOL_CALL_START")
    text = next(e for e in events if e["type"] == "TEXT_MESSAGE_START")
    assert start["toolCallName"] == "get_weather"
    assert start["parentMessageId"] == text["messageId"]
    args = "".join(e["delta"] for e in events if e["type"] == "TOOL_CALL_ARGS")
    assert json.loads(args) == {"city": "Paris", "units": "c"}
    assert events[-1]["outcome"] == {"type": "success", "pendingToolCallIds": ["call_abc123"]}


def test_agui_error_after_output_is_run_error_never_run_finished(server: Server) -> None:
    events = agui_events(post(server, AGUI_PATH, agui_input("demo-midstream")).body)
    assert events[-1] == {
        "type": "RUN_ERROR",
        "message": "upstream dropped the connection",
        "code": "network",
    }
    assert not any(e["type"] == "RUN_FINISHED" for e in events)


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"forwardedProps": {"model": "demo-text", "base_url": "http://evil"}}, "forwardedProps.base_url"),
        ({"apiKey": "x"}, "request.apiKey"),
        ({"resume": [{"interruptId": "i", "status": "resolved"}]}, "request.resume"),
        ({"messages": [{"id": "u", "role": "user", "content": [{"type": "audio", "source": {"type": "data", "value": "AA==", "mimeType": "audio/wav"}}]}]}, "messages[0].content[0].type"),
        ({"runId": 7}, "request.runId"),
        ({"messages": [{"id": "u", "role": "user", "content": "hi"}, {"id": "a", "role": "assistant", "toolCalls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"city": "Pa'}}]}]}, "messages[1].toolCalls[0].function.arguments (tool call 'c1'"),
    ],
)  # fmt: skip
def test_agui_bad_bodies_are_400s_naming_the_field(
    server: Server, change: dict[str, Any], named: str
) -> None:
    response = post(server, AGUI_PATH, {**agui_input(), **change})
    assert response.status == 400
    assert named in json.loads(response.body)["error"]["message"]


# -- the real clients under node --------------------------------------------------------


def _node(script: str, path: str, server: Server, request: dict[str, Any], package: str) -> Any:
    node = shutil.which("node")
    if node is None:
        missing("node", "install node and npm (apt-get install nodejs npm)")
    if not (NODE_DIR / "node_modules" / package / "package.json").is_file():
        missing(
            f"the npm package {package} in {NODE_DIR}",
            f"cd {NODE_DIR} && npm install 'ai@^6' '@ag-ui/client@^1' '@ag-ui/core@^1' "
            "(.ci/run does this; STREAMFN_NODE_DIR chooses the folder)",
        )
    done = subprocess.run(
        [node, str(JS / script), str(NODE_DIR), server.url + path, KEY, json.dumps(request)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    out = json.loads(done.stdout)
    assert "thrown" not in out, out["thrown"]
    return out


def test_the_ai_sdk_chat_client_reads_text_reasoning_and_tool_answers(server: Server) -> None:
    messages = [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}]
    for model, expected in [
        ("demo-text", [{"type": "text", "text": "Hello, wörld 🌍", "state": "done"}]),
        (
            "demo-thinking",
            [
                {
                    "type": "reasoning",
                    "text": "The user greets me. I should greet back.",
                    "state": "done",
                },
                {"type": "text", "text": "Hi there!", "state": "done"},
            ],
        ),
    ]:
        out = _node(
            "ui_chat_client.cjs",
            UI_CHAT_PATH,
            server,
            {"chatId": "c", "messages": messages, "body": {"model": model}},
            "ai",
        )
        assert out["errors"] == []
        final = out["messages"][-1]
        assert final["role"] == "assistant"
        shown = [
            {k: p[k] for k in ("type", "text", "state")}
            for p in final["parts"]
            if p["type"] != "step-start"
        ]
        assert shown == expected
    out = _node(
        "ui_chat_client.cjs",
        UI_CHAT_PATH,
        server,
        {"chatId": "c", "messages": messages, "body": {"model": "demo-tool"}},
        "ai",
    )
    tool = next(p for p in out["messages"][-1]["parts"] if p["type"] == "tool-get_weather")
    assert tool["state"] == "input-available"
    assert tool["input"] == {"city": "Paris", "units": "c"}
    assert out["chunks"][-1] == {"type": "finish", "finishReason": "tool-calls"}


def test_the_ai_sdk_chat_client_sees_a_cut_answer_as_an_error(server: Server) -> None:
    messages = [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}]
    out = _node(
        "ui_chat_client.cjs",
        UI_CHAT_PATH,
        server,
        {"chatId": "c", "messages": messages, "body": {"model": "demo-midstream"}},
        "ai",
    )
    assert out["errors"] == ["upstream dropped the connection"]
    assert not any(c["type"] == "finish" for c in out["chunks"])


def test_the_ai_sdk_transport_body_with_tool_history_is_accepted(server: Server) -> None:
    """What useChat sends after a client-side tool ran: the whole history, tool part included."""
    messages = [
        {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "weather?"}]},
        {
            "id": "a1",
            "role": "assistant",
            "parts": [
                {"type": "step-start"},
                {"type": "tool-get_weather", "toolCallId": "call_1", "state": "output-available", "input": {"city": "Paris"}, "output": {"c": 21}},
                {"type": "step-start"},
                {"type": "text", "text": "It is 21 °C.", "state": "done"},
            ],
        },
        {"id": "u2", "role": "user", "parts": [{"type": "text", "text": "thanks"}]},
    ]  # fmt: skip
    out = _node(
        "ui_chat_client.cjs",
        UI_CHAT_PATH,
        server,
        {"chatId": "c", "messages": messages, "body": {}},
        "ai",
    )
    assert "requestError" not in out, out.get("requestError")
    assert out["chunks"][-1]["type"] == "finish"


def test_the_ag_ui_http_agent_runs_against_the_server(server: Server) -> None:
    request = {
        "threadId": "t1",
        "runId": "r1",
        "messages": [{"id": "u1", "role": "user", "content": "hi"}],
        "forwardedProps": {"model": "demo-tool"},
        "tools": [
            {"name": "get_weather", "description": "weather", "parameters": {"type": "object"}}
        ],
    }
    out = _node("agui_client.cjs", AGUI_PATH, server, request, "@ag-ui/client")
    assert "runError" not in out, out.get("runError")
    assert out["events"][-1]["type"] == "RUN_FINISHED"
    assistant = out["newMessages"][-1]
    assert assistant["role"] == "assistant"
    assert assistant["content"] == "Checking."
    [call] = assistant["toolCalls"]
    assert call["function"]["name"] == "get_weather"
    assert json.loads(call["function"]["arguments"]) == {"city": "Paris", "units": "c"}
    request["forwardedProps"] = {"model": "demo-thinking"}
    out = _node("agui_client.cjs", AGUI_PATH, server, request, "@ag-ui/client")
    assert "runError" not in out, out.get("runError")
    reasoning = next(m for m in out["newMessages"] if m["role"] == "reasoning")
    assert reasoning["content"] == "The user greets me. I should greet back."
    assert out["newMessages"][-1]["content"] == "Hi there!"


def test_the_ag_ui_http_agent_fails_a_cut_run(server: Server) -> None:
    request = {
        "threadId": "t1",
        "runId": "r1",
        "messages": [{"id": "u1", "role": "user", "content": "hi"}],
        "forwardedProps": {"model": "demo-midstream"},
    }
    out = _node("agui_client.cjs", AGUI_PATH, server, request, "@ag-ui/client")
    assert out["events"][-1] == {
        "type": "RUN_ERROR",
        "message": "upstream dropped the connection",
        "code": "network",
    }
    assert not any(e["type"] == "RUN_FINISHED" for e in out["events"])


# -- streamfn consuming such servers (the decoders) -----------------------------------


@pytest.mark.parametrize("api", ["ui-message-stream", "agui"])
@pytest.mark.parametrize("name", ["demo-text", "demo-tool", "demo-thinking", "demo-midstream"])
def test_streamfn_reads_back_what_the_route_answers(server: Server, api: str, name: str) -> None:
    import asyncio

    from loopback_server import STREAMS

    from streamfn.core import Context, Model, Options, Tool, accumulate
    from streamfn.core._events import Error
    from streamfn.core._messages import ThinkingContent
    from streamfn.io_asyncio import Client

    # the tool the demo answer calls is declared (a call of an undeclared one is flagged)
    weather = Tool(name="get_weather", description="weather", parameters={"type": "object"})
    context = Context(messages=Context.of("hi").messages, tools=[weather])

    async def consume() -> list[Any]:
        model = Model(id=name, provider="front", api=api, base_url=server.url)
        async with (
            Client(environ={}) as client,
            client.stream(model, context, Options(api_key=KEY)) as events,
        ):
            return [e async for e in events]

    got, sent = accumulate(asyncio.run(consume())), accumulate(STREAMS[name])

    def shown(message: Any) -> list[Any]:
        # what both protocols carry: block kinds and text, calls; not signatures
        return [
            (type(b).__name__, b.thinking) if isinstance(b, ThinkingContent) else b
            for b in message.content
        ]

    assert shown(got) == shown(sent)
    assert got.stop_reason == sent.stop_reason
    if api == "agui":
        if isinstance(STREAMS[name][-1], Error):  # its code; the UI stream has only words
            assert got.error_kind == sent.error_kind
        assert got.usage.total == sent.usage.total  # AG-UI carries usage; the UI stream none
        signature = [b.signature for b in got.content if isinstance(b, ThinkingContent)]
        assert signature == [b.signature for b in sent.content if isinstance(b, ThinkingContent)]


def _history() -> Any:
    from streamfn.core import Context
    from streamfn.core._messages import (
        AssistantMessage,
        ImageContent,
        TextContent,
        Tool,
        ToolCall,
        ToolResultMessage,
        UserMessage,
    )

    call = ToolCall(id="call_1", name="get_weather", arguments={"city": "Paris"})
    return Context(
        system_prompt="Be brief.",
        messages=[
            UserMessage(
                content=[
                    TextContent(text="weather?"),
                    ImageContent(data="iVBORw0K", mime_type="image/png"),
                ]
            ),
            AssistantMessage(content=[TextContent(text="Checking."), call]),
            ToolResultMessage.of(call, "21 °C"),
            UserMessage(content="thanks"),
        ],
        tools=[Tool(name="get_weather", description="weather", parameters={"type": "object"})],
    )


@pytest.mark.parametrize("api", ["ui-message-stream", "agui"])
def test_the_decoders_request_is_what_the_route_parses_back(api: str) -> None:
    """The request builder of each wire format and the server's parser agree on a history
    with an image, a tool call and its result."""
    from streamfn.core import Model, Options
    from streamfn.core._call import open_call
    from streamfn.core._messages import AssistantMessage, ToolCall, ToolResultMessage
    from streamfn.core.serve._routes import parse_request

    context = _history()
    model = Model(id="demo-text", provider="front", api=api, base_url="http://127.0.0.1:1")
    body = open_call(model, context, Options()).request.body
    path = UI_CHAT_PATH if api == "ui-message-stream" else AGUI_PATH
    parsed = parse_request(path, body).context
    assert parsed.system_prompt == context.system_prompt
    assert parsed.tools == context.tools
    assert [type(m) for m in parsed.messages] == [type(m) for m in context.messages]
    assert parsed.messages[0] == context.messages[0]
    assistant = parsed.messages[1]
    assert isinstance(assistant, AssistantMessage)
    [call] = [b for b in assistant.content if isinstance(b, ToolCall)]
    assert (call.id, call.name, call.arguments) == ("call_1", "get_weather", {"city": "Paris"})
    result = parsed.messages[2]
    assert isinstance(result, ToolResultMessage)
    assert (result.tool_call_id, result.tool_name) == ("call_1", "get_weather")
    assert result.content == context.messages[2].content


# -- pure pieces ------------------------------------------------------------------------


def test_ui_arguments_that_are_not_an_object_are_a_tool_input_error() -> None:
    from streamfn.core._events import ToolCallDelta, ToolCallEnd, ToolCallStart
    from streamfn.core.dialects.ui_message_stream import UIMessageStreamEncoder

    encoder = UIMessageStreamEncoder(message_id="m")
    body = b"".join(
        encoder.encode(e)
        for e in (ToolCallStart(0, "c1", "f"), ToolCallDelta(0, '{"a": 1'), ToolCallEnd(0))
    )
    last = json.loads(sse_data(body)[-1])
    assert last["type"] == "tool-input-error"
    assert (last["toolCallId"], last["toolName"], last["input"]) == ("c1", "f", '{"a": 1')
    assert "not valid JSON" in last["errorText"]


def test_ui_assistant_message_with_steps_becomes_turns_each_followed_by_its_results() -> None:
    from streamfn.core._messages import AssistantMessage, TextContent, ToolCall, ToolResultMessage
    from streamfn.core.serve._routes import parse_request

    tool = {"type": "tool-f", "toolCallId": "c1", "state": "output-error", "input": {}}
    assistant = {
        "id": "a",
        "role": "assistant",
        "parts": [
            {"type": "step-start"},
            {"type": "text", "text": "Let me see."},
            {**tool, "errorText": "boom"},
            {"type": "step-start"},
            {"type": "text", "text": "It failed."},
        ],
    }
    request = {**ui_body(), "messages": [ui_body()["messages"][0], assistant]}
    messages = parse_request(UI_CHAT_PATH, json.dumps(request).encode()).context.messages
    assert [type(m) for m in messages[1:]] == [
        AssistantMessage,
        ToolResultMessage,
        AssistantMessage,
    ]
    first, result, second = messages[1:]
    assert isinstance(first, AssistantMessage) and isinstance(second, AssistantMessage)
    assert [type(b) for b in first.content] == [TextContent, ToolCall]
    assert isinstance(result, ToolResultMessage) and result.is_error
    assert result.content == [TextContent(text="boom")]
    assert second.content == [TextContent(text="It failed.")]


def test_the_models_output_cap_holds_under_the_protocols_own_name() -> None:
    with serving(max_output=100) as (capped, _):
        response = post(capped, UI_CHAT_PATH, {**ui_body(), "maxOutputTokens": 101})
    assert response.status == 400
    assert (
        "request.maxOutputTokens: 101 is more than" in json.loads(response.body)["error"]["message"]
    )


def test_ui_answer_after_a_tool_output_continues_the_last_assistant_message(
    server: Server,
) -> None:
    """The SDK's own servers answer with the last assistant message's id (its
    ``getResponseUIMessageId``), so ``useChat`` appends to that message."""
    assistant = {
        "id": "a1",
        "role": "assistant",
        "parts": [
            {
                "type": "tool-f",
                "toolCallId": "c1",
                "state": "output-available",
                "input": {},
                "output": 1,
            }
        ],
    }
    first = ui_body()["messages"][0]
    continued = post(server, UI_CHAT_PATH, {**ui_body(), "messages": [first, assistant]})
    assert json.loads(sse_data(continued.body)[0]) == {"type": "start", "messageId": "a1"}
    fresh = post(server, UI_CHAT_PATH, ui_body())
    assert json.loads(sse_data(fresh.body)[0])["messageId"] != "a1"


def test_ui_tool_call_the_checks_flagged_is_a_tool_input_error_and_repairs_are_used() -> None:
    """The UI stream follows `ToolCallEnd` as the tool-call checks left it: a call whose
    arguments break the tool's schema is not made available to run, and repaired
    arguments and names replace the streamed ones."""
    from streamfn.core._events import ToolCallDelta, ToolCallEnd, ToolCallStart
    from streamfn.core.dialects.ui_message_stream import UIMessageStreamEncoder
    from streamfn.core.json._schema_check import SchemaMismatch

    def last_part(end: ToolCallEnd, streamed: str) -> dict[str, Any]:
        encoder = UIMessageStreamEncoder(message_id="m")
        start, delta = ToolCallStart(0, "c1", " f"), ToolCallDelta(0, streamed)
        body = b"".join(encoder.encode(e) for e in (start, delta, end))
        return json.loads(sse_data(body)[-1])  # type: ignore[no-any-return]

    flagged = ToolCallEnd(0, errors=(SchemaMismatch("/city", "expected a string"),))
    part = last_part(flagged, '{"city": 3}')
    assert part["type"] == "tool-input-error"
    assert part["input"] == {"city": 3} and "/city: expected a string" in part["errorText"]
    repaired = ToolCallEnd(0, name="f", arguments='{"city": "Paris"}', repairs=("two objects",))
    part = last_part(repaired, '{}{"city": "Paris"}')
    assert part == {
        "type": "tool-input-available",
        "toolCallId": "c1",
        "toolName": "f",
        "input": {"city": "Paris"},
    }


@pytest.mark.parametrize("stop", ["error", "aborted"])
def test_agui_run_finished_that_says_the_answer_was_cut_is_an_error(stop: str) -> None:
    """A ``RUN_FINISHED`` whose ``metadata.stopReason`` says the answer did not finish is
    read as the `Error` it names, never as a complete answer."""
    from streamfn.core import replay
    from streamfn.core._events import Done, Error, StopReason

    finished = {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}
    frames = [
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
        {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "part"},
        {"type": "TEXT_MESSAGE_END", "messageId": "m"},
        {**finished, "metadata": {"stopReason": stop}},
    ]
    body = b"".join(b"data: " + json.dumps(f).encode() + b"\n\n" for f in frames)
    last = replay("agui", body)[-1]
    assert isinstance(last, Error) and not isinstance(last, Done)
    assert last.stop_reason == (StopReason.ABORTED if stop == "aborted" else StopReason.ERROR)


@pytest.mark.parametrize("reason", ["other", "unknown", None])
def test_ui_finish_reason_that_says_nothing_is_read_with_a_warning(
    reason: str | None, caplog: pytest.LogCaptureFixture
) -> None:
    """``finishReason`` "other" / "unknown" (or none) does not say the answer finished:
    the decoder still ends it, and one warning names the word it guessed from."""
    from streamfn.core import replay
    from streamfn.core._events import Done

    finish: dict[str, object] = {"type": "finish"}
    if reason is not None:
        finish["finishReason"] = reason
    frames = [{"type": "start", "messageId": "m"}, {"type": "text-start", "id": "t"}]
    frames += [{"type": "text-delta", "id": "t", "delta": "hi"}, {"type": "text-end", "id": "t"}]
    body = b"".join(b"data: " + json.dumps(f).encode() + b"\n\n" for f in [*frames, finish])
    with caplog.at_level(logging.WARNING, logger="streamfn"):
        last = replay("ui-message-stream", body + b"data: [DONE]\n\n")[-1]
    assert isinstance(last, Done)
    warnings = [r.getMessage() for r in caplog.records if "finishReason" in r.getMessage()]
    assert len(warnings) == 1 and repr(reason) in warnings[0]
