"""`register_api`: a wire format from outside the package, end to end.

The documentation's example provider (``tests/lines_wire.py``, shown verbatim on the
"Your own wire format" page)
is registered and then reached the way every built-in format is: `open_call`,
`replay`, both shells against a loopback server, ``streamfn serve`` in front
of it (driven by the official openai SDK), and ``streamfn replay --api``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import lines_wire
import pytest
from fake_provider import FakeProvider
from loopback_server import ask_served
from shell_runner import FAST, collect, run

from streamfn import cli
from streamfn.cli._command import EXIT_USAGE
from streamfn.core import (
    Context,
    Model,
    Options,
    StopReason,
    Usage,
    accumulate,
    check_protocol,
    open_call,
    register_api,
    replay,
)
from streamfn.core._call import api_names, load_entry_point_apis
from streamfn.io_asyncio._backends import ProviderBackend

BODY = b"".join(
    json.dumps(line).encode() + b"\n"
    for line in [
        {"delta": "Bonjour"},
        {"delta": ", monde"},
        {"done": True, "input_tokens": 4, "output_tokens": 3},
    ]
)
NDJSON = "application/x-ndjson"

register_api("lines", lines_wire, replace=True)


def test_the_docs_show_the_example_provider_verbatim() -> None:
    readme = (Path(__file__).parents[2] / "docs" / "own-wire-format.md").read_text()
    source = (Path(__file__).parents[1] / "lines_wire.py").read_text()
    assert source.strip() in readme


def test_registration_refuses_builtins_duplicates_and_non_providers() -> None:
    assert "lines" in api_names() and "openai-chat" in api_names()
    with pytest.raises(ValueError, match="built-in"):
        register_api("openai-chat", lines_wire)
    with pytest.raises(ValueError, match="already registered"):
        register_api("lines", lines_wire)
    with pytest.raises(TypeError, match="open_call"):
        register_api("nothing", object())


def test_open_call_and_replay_use_the_registered_module() -> None:
    model = Model(id="tiny", provider="lines", api="lines", base_url="http://lines.invalid/")
    call = open_call(model, Context.of("hi"), Options(api_key="k", max_tokens=9))
    assert call.request.url == "http://lines.invalid/generate"
    assert json.loads(call.request.body) == {"model": "tiny", "prompt": "hi", "max_tokens": 9}
    assert ("authorization", "Bearer k") in call.request.headers
    events = replay("lines", BODY, headers=[("content-type", NDJSON)])
    check_protocol(events)
    message = accumulate(events)
    assert message.api == "lines" and message.stop_reason == StopReason.STOP
    assert message.usage == Usage(input=4, output=3)
    assert "".join(b.text for b in message.content) == "Bonjour, monde"  # type: ignore[union-attr]
    cut = replay("lines", BODY[:20], headers=[("content-type", NDJSON)])
    assert accumulate(cut).stop_reason == StopReason.ERROR  # the base class's early-EOF rule


@pytest.fixture(scope="module")
def upstream() -> Iterator[FakeProvider]:
    with FakeProvider() as fake:
        fake.register_body("lines", BODY, NDJSON)
        yield fake


@pytest.mark.parametrize("shell", ["trio", "asyncio"])
def test_both_shells_stream_it_from_a_loopback_server(upstream: FakeProvider, shell: str) -> None:
    model = Model(
        id="tiny", provider="lines", api="lines", base_url=upstream.base_url("ok", "lines", shell)
    )
    events = run(shell, collect, model, FAST)
    assert events == replay("lines", BODY, headers=[("content-type", NDJSON)], model=model)
    sent = [r for r in upstream.requests if f"/lines/{shell}/" in r.path]
    assert len(sent) == 1 and sent[0].path.endswith("/generate")


def test_the_server_serves_it_to_an_openai_client(upstream: FakeProvider) -> None:
    model = Model(
        id="tiny", provider="lines", api="lines", base_url=upstream.base_url("ok", "lines", "srv")
    )
    backend = ProviderBackend(environ={}, models=[model])
    answer = ask_served(backend, "lines:tiny")
    assert answer.choices[0].message.content == "Bonjour, monde"
    assert answer.usage is not None and answer.usage.completion_tokens == 3


def test_the_cli_replays_it_and_loads_entry_points(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    recording = tmp_path / "body.ndjson"
    recording.write_bytes(BODY)
    assert cli.main(["replay", "--api", "lines", "--no-message", str(recording)]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert lines[0]["type"] == "start" and lines[0]["api"] == "lines"
    assert lines[-1]["type"] == "done"

    points = [SimpleNamespace(name="lines-again", load=lambda: lines_wire)]

    def entry_points(**kwargs: Any) -> list[SimpleNamespace]:
        assert kwargs == {"group": "streamfn.apis"}
        return points

    assert load_entry_point_apis(entry_points) == ["lines-again"]
    assert load_entry_point_apis(entry_points) == []  # once only
    assert "lines-again" in api_names()


# ---------------------------------------------------------------------------
# Everywhere a built-in format goes: `streamfn chat -m`, `streamfn models`, the
# gateway's configuration file
# ---------------------------------------------------------------------------


def test_the_cli_chats_with_it_by_format_and_model_id(
    upstream: FakeProvider, capsys: pytest.CaptureFixture[str]
) -> None:
    base = upstream.base_url("ok", "lines", "cli")
    assert cli.main(["chat", "-m", "lines:tiny", "--base-url", base, "hi"]) == 0
    out, err = capsys.readouterr()
    assert out == "Bonjour, monde\n" and "is not in the model catalogue" not in err
    sent = [r for r in upstream.requests if "/lines/cli/" in r.path]
    assert len(sent) == 1 and json.loads(sent[0].body)["model"] == "tiny"
    # its server's address is the caller's to give, as for Azure
    assert cli.main(["chat", "-m", "lines:tiny", "hi"]) == EXIT_USAGE
    assert "--base-url" in capsys.readouterr().err


def test_streamfn_models_knows_it(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["models", "--provider", "lines"]) == 0
    out = capsys.readouterr().out
    assert "plug-in wire format" in out and "streamfn chat -m lines:MODEL-ID" in out
    assert cli.main(["models"]) == 0
    assert "plug-in wire formats: lines" in capsys.readouterr().out


def test_the_gateway_config_serves_it(tmp_path: Path, upstream: FakeProvider) -> None:
    from streamfn.cli._serve_config import ConfigError, load_gateway_config

    config = tmp_path / "gateway.toml"
    config.write_text(
        f"""
[[models]]
name = "tiny"
api = "lines"
id = "tiny"
base_url = "{upstream.base_url("ok", "lines", "cfg")}"
"""
    )
    gateway = load_gateway_config(config)
    backend = ProviderBackend(environ={}, served=gateway.models, registry=gateway.registry)
    answer = ask_served(backend, "tiny")
    assert answer.choices[0].message.content == "Bonjour, monde"
    assert any("/lines/cfg/" in r.path for r in upstream.requests)
    config.write_text(config.read_text().replace('api = "lines"', 'api = "no-such-wire"'))
    with pytest.raises(ConfigError, match="lines"):  # the error lists the plug-in too
        load_gateway_config(config)
