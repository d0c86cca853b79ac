"""A new wire format is one room: a toy format written as one package plus one
registration line, then reached like a built-in one.

The package (written below into the test's own directory) holds its call (request
builder and decoder) and its `WireFormat`, which the format-neutral feature modules
ask: which inputs it takes, which server tools it runs and with which config keys,
the tool-call ids it accepts, and where its credentials come from. Nothing else in
the library learns its name: ``register_api("toy", "toy_wire")`` is the whole
registration, and the toy stream then runs through the three shells and through
``streamfn serve`` (the ASGI app, driven by the official openai SDK).
"""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_provider import FakeProvider
from loopback_server import ask_served
from shell_runner import SHELLS, collect, run

from streamfn.core import (
    AssistantMessage,
    Context,
    DocumentContent,
    Model,
    Options,
    ServerTool,
    StopReason,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UnsupportedInput,
    Usage,
    UserMessage,
    accumulate,
    open_call,
    register_api,
    replay,
)
from streamfn.io_asyncio._backends import ProviderBackend

#: the toy format's one package: its call and its room
TOY_PACKAGE = {
    "__init__.py": '''
        """The toy wire format: NDJSON lines ``{"say": ...}``, then ``{"end": ...}``."""

        from ._call import open_call
        from ._room import WIRE_FORMAT

        __all__ = ["WIRE_FORMAT", "open_call"]
    ''',
    "_call.py": """
        import msgspec

        from streamfn.core import Context, Model, Options, StopReason, Usage
        from streamfn.core.providers import (
            NDJSONCall,
            bearer,
            json_request,
            prepare_messages,
            request_headers,
            tool_objects,
        )


        class ToyCall(NDJSONCall):
            api = "toy"

            def on_line(self, line: bytes) -> None:
                obj = msgspec.json.decode(line)
                if "say" in obj:
                    self.emit.text("say", obj["say"])
                elif "end" in obj:
                    self.usage = Usage(input=obj["end"]["in"], output=obj["end"]["out"])
                    self.finish(StopReason.STOP)


        def open_call(model: Model, context: Context, options: Options) -> ToyCall:
            messages = prepare_messages(context, model)
            body = {
                "model": model.id,
                "turns": [msgspec.to_builtins(m) for m in messages],
                "tools": tool_objects(model, context),
            }
            headers = request_headers(
                model, options, accept="application/x-ndjson", auth=bearer(options.api_key)
            )
            base = (options.base_url or model.base_url).rstrip("/")
            return ToyCall(model, context, options, json_request(f"{base}/toy", headers, body, options))
    """,
    "_room.py": """
        from collections.abc import Mapping

        import msgspec

        from streamfn.core import MissingCredentials, Model, Options, WireFormat


        def _inputs(model: Model) -> tuple[str, ...]:
            return ("image",)


        def _credentials(model: Model, options: Options, environ: Mapping[str, str]) -> Options:
            if options.api_key:
                return options
            token = environ.get("TOY_TOKEN")
            if not token:
                raise MissingCredentials("no toy token: set TOY_TOKEN", model.provider, ("TOY_TOKEN",))
            return msgspec.structs.replace(options, api_key=token)


        WIRE_FORMAT = WireFormat(
            input_kinds=_inputs,
            server_tools={"web_search": {"type": "toy_search"}},
            server_tool_keys={"web_search": frozenset({"depth"})},
            tool_call_id=lambda tool_id: "toy_" + tool_id.replace("/", "_"),
            credentials=_credentials,
        )
    """,
}

BODY = b'{"say": "Hello"}\n{"say": ", toy"}\n{"end": {"in": 5, "out": 2}}\n'
NDJSON = "application/x-ndjson"


@pytest.fixture(scope="module", autouse=True)
def toy_registered(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    root = tmp_path_factory.mktemp("toy")
    package = root / "toy_wire"
    package.mkdir()
    for name, source in TOY_PACKAGE.items():
        (package / name).write_text(textwrap.dedent(source).lstrip())
    sys.path.insert(0, str(root))
    register_api("toy", "toy_wire", replace=True)  # the one registration line
    yield
    sys.path.remove(str(root))


@pytest.fixture(scope="module")
def upstream() -> Iterator[FakeProvider]:
    with FakeProvider() as fake:
        fake.register_body("toy", BODY, NDJSON)
        yield fake


def _toy(base_url: str = "http://toy.invalid") -> Model:
    return Model(id="tiny", provider="toy", api="toy", base_url=base_url)


def test_the_feature_modules_ask_the_toy_room() -> None:
    called = ToolCall(id="call/1", name="look", arguments={})
    context = Context(
        messages=[
            UserMessage(content="hi"),
            AssistantMessage(content=[called], api="toy", provider="toy", model="tiny"),
            ToolResultMessage(
                tool_call_id=called.id, tool_name=called.name, content=[TextContent(text="seen")]
            ),
        ],
        tools=[ServerTool(type="web_search", config={"depth": 2})],
    )
    call = open_call(_toy(), context, Options(api_key="k"))
    body = json.loads(call.request.body)
    assert body["tools"] == [{"type": "toy_search", "depth": 2}]  # its server tool object
    _, asked, answered = body["turns"]  # its tool-call id rule, on the call and its result
    assert asked["content"][0]["id"] == answered["tool_call_id"] == "toy_call_1"
    with pytest.raises(UnsupportedInput, match="depth"):  # its server tools' config keys
        bad = ServerTool(type="web_search", config={"max_uses": 1})
        open_call(
            _toy(), Context(messages=[UserMessage(content="hi")], tools=[bad]), Options(api_key="k")
        )
    elsewhere = Model(id="m", provider="ollama", api="ollama", base_url="http://o.invalid")
    search = Context(messages=[UserMessage(content="hi")], tools=[ServerTool(type="web_search")])
    with pytest.raises(UnsupportedInput, match=r"wire formats: .*\btoy\b"):  # it runs one
        open_call(elsewhere, search, Options(api_key="k"))
    document = DocumentContent.from_bytes(b"%PDF-1.4", "application/pdf")
    with pytest.raises(UnsupportedInput, match="takes: image"):  # its input kinds
        open_call(_toy(), Context(messages=[UserMessage(content=[document])]), Options(api_key="k"))


@pytest.mark.parametrize("shell", SHELLS)
def test_each_shell_streams_the_toy_format(upstream: FakeProvider, shell: str) -> None:
    model = _toy(upstream.base_url("ok", "toy", f"shell-{shell}"))
    options = Options(connect_timeout=2.0, first_byte_timeout=2.0, idle_timeout=2.0)
    events = run(shell, collect, model, options, environ={"TOY_TOKEN": "toy-token"})
    assert events == replay("toy", BODY, headers=[("content-type", NDJSON)], model=model)
    message = accumulate(events)
    assert message.stop_reason == StopReason.STOP and message.usage == Usage(input=5, output=2)
    sent = [r for r in upstream.requests if f"/shell-{shell}/" in r.path]
    assert len(sent) == 1 and sent[0].path.endswith("/toy")
    assert sent[0].headers["authorization"] == "Bearer toy-token"  # its credentials hook


def test_the_server_serves_the_toy_format(upstream: FakeProvider) -> None:
    model = _toy(upstream.base_url("ok", "toy", "srv"))
    backend = ProviderBackend(environ={"TOY_TOKEN": "toy-token"}, models=[model])
    answer = ask_served(backend, "toy:tiny")
    assert answer.choices[0].message.content == "Hello, toy"
    assert answer.usage is not None and answer.usage.completion_tokens == 2
    sent = [r for r in upstream.requests if "/srv/" in r.path]
    assert len(sent) == 1 and sent[0].headers["authorization"] == "Bearer toy-token"


def test_the_toy_package_is_one_room(toy_registered: None) -> None:
    import toy_wire

    files = sorted(p.name for p in Path(toy_wire.__file__).parent.glob("*.py"))
    assert files == sorted(TOY_PACKAGE)
