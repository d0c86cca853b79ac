"""``streamfn serve`` as operators run it: flags, ``--config``, ``--workers``, the proxy.

Refusals are checked in process (they happen before anything is bound); the
gateway configuration and ``--workers`` run the real command in a subprocess
against a loopback fake upstream, spoken to by the official openai SDK.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest
from fake_provider import FakeProvider
from loopback_server import STREAMS, Server

import streamfn.io_asyncio as sf_asyncio
from streamfn import cli
from streamfn.asgi import ServerConfig
from streamfn.cli._serve_config import ConfigError, load_gateway_config
from streamfn.core import Context, Done, Model, Options
from streamfn.fuzz._events_backend import EventsBackend
from streamfn.io_asyncio._backends import ProviderBackend
from streamfn.io_asyncio._server import App

USER = [{"role": "user", "content": "Say hello"}]


def _serve(*args: str) -> int:
    return cli.main(["serve", *args])


def test_a_network_bind_without_a_token_is_refused(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("STREAMFN_SERVER_API_KEY", raising=False)
    assert _serve("--host", "0.0.0.0", "--no-local") == 2
    err = capsys.readouterr().err
    assert "--api-key" in err and "--insecure-no-auth" in err


def test_a_server_without_store_says_the_keys_made_for_it_go_unchecked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Keys made with `streamfn keys create` (in the default store) and a plain
    `streamfn serve`: the server warns that it checks none of them, before it binds
    (here the port is taken, so it stops there); without keys, or with none made,
    it says nothing and makes no store."""
    from streamfn.ledger import SQLiteStore

    monkeypatch.delenv("STREAMFN_STORE", raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    default = tmp_path / "streamfn" / "gateway.db"
    taken = socket.create_server(("127.0.0.1", 0))
    port = str(taken.getsockname()[1])
    try:
        assert _serve("--no-local", "--port", port) != 0
        assert "warning" not in capsys.readouterr().err and not default.exists()
        store = SQLiteStore(default)
        store.create_key("ci", now=time.time())
        store.close()
        before = {p.name: p.stat().st_mtime_ns for p in default.parent.iterdir()}
        assert _serve("--no-local", "--port", port) != 0
        err = capsys.readouterr().err
        assert f"{default} holds 1 client key" in err and "add --store" in err
        # read only: a plain serve migrates nothing, makes no journal, waits on no lock
        assert {p.name: p.stat().st_mtime_ns for p in default.parent.iterdir()} == before
        assert _serve("--no-local", "--port", port, "--store") != 0
        assert "warning" not in capsys.readouterr().err
        monkeypatch.setenv("STREAMFN_STORE", str(default))
        assert _serve("--no-local", "--port", port) != 0
        assert "STREAMFN_STORE names a usage store" in capsys.readouterr().err
    finally:
        taken.close()


@pytest.mark.parametrize(
    ("store", "says"),
    [
        ("sqlite://gateway.db", "three slashes"),
        ("mysql://db/streamfn", "names no store streamfn knows"),
    ],
)
def test_a_wrong_store_url_stops_the_server_before_it_says_it_serves(
    capsys: pytest.CaptureFixture[str], store: str, says: str
) -> None:
    """The start line ("streamfn serve: http://...") is not printed for a server that
    is about to exit: the store is opened first, and its error is the last word."""
    assert _serve("--no-local", "--port", "0", "--store", store) == 1
    err = capsys.readouterr().err
    assert says in err and "streamfn serve: http://" not in err


def test_store_flag_and_config_keys_name_one_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--store`` alone turns keys on in the store the config's [keys] names (not the
    default one beside it); a ``--store URL`` naming another store is refused."""
    config = tmp_path / "gateway.toml"
    config.write_text(
        "[keys]\nstore = 'mysql://db/keys'\n[[models]]\nname='a'\nupstream='openai:gpt-4o-mini'\n"
    )
    taken = socket.create_server(("127.0.0.1", 0))
    port = str(taken.getsockname()[1])
    try:
        assert _serve("--no-local", "--port", port, "--config", str(config), "--store") == 1
        assert "'mysql://db/keys' names no store" in capsys.readouterr().err
        other = str(tmp_path / "other.db")
        assert _serve("--no-local", "--port", port, "--config", str(config), "--store", other) == 2
        err = capsys.readouterr().err
        assert f"--store {other} and {config}'s [keys] store mysql://db/keys" in err
        assert "drop one" in err and not (tmp_path / "other.db").exists()
    finally:
        taken.close()


def test_a_missing_model_dir_is_an_error_not_a_download(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "no-such-model"
    assert _serve("--model-dir", str(missing), "--no-providers") == 1
    assert "holds no prepared model" in capsys.readouterr().err
    assert not missing.exists()


def test_a_memory_budget_below_one_body_is_a_usage_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert _serve("--no-local", "--max-buffered-bytes", "10") == 2
    assert "--max-buffered-bytes must be at least --max-body-bytes" in capsys.readouterr().err


def test_any_origin_with_a_key_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    # any page a key holder visits could call the server with the key
    assert _serve("--no-local", "--api-key", "k", "--cors-origin", "*") == 2
    assert "--cors-origin '*' with an API key" in capsys.readouterr().err


def test_a_malformed_base_url_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert _serve("--no-local", "--base-url", "openai") == 2
    assert "PROVIDER=URL" in capsys.readouterr().err


def test_config_errors_name_the_entry_and_field(tmp_path: Path) -> None:
    cases = {
        "[[models]]\nname='a'\nupstream='openai:nope-model'\n": "models[0] (a).upstream",
        "[[models]]\nname='a'\napi='openai-chat'\nid='x'\n": "give api, id and base_url",
        "[[models]]\nname='a'\nupstream='openai:gpt-4o-mini'\nsurprise=1\n": "surprise",
        "[[models]]\nname='a'\nupstream='openai:gpt-4o-mini'\n[models.defaults]\napi_key='k'\n": (
            "api_key_env"
        ),
        # one name twice is two deployments of it, which health records must tell apart
        "[[models]]\nname='a'\nupstream='openai:gpt-4o-mini'\ndeployment='x'\n"
        "[[models]]\nname='a'\nupstream='openai:gpt-4o-mini'\ndeployment='x'\n": (
            "'x' names another one too"
        ),
        "[[models]]\nname='a'\nupstream='openai:gpt-4o-mini'\nweight=0\n": "models[0] (a).weight",
        "cooldown = -1\n[[models]]\nname='a'\nupstream='openai:gpt-4o-mini'\n": "cooldown",
        "models = 3": "Expected `array`",
        # only OpenAI's Responses streams over a WebSocket: said at start, not per request
        "[[models]]\nname='a'\nupstream='openai:gpt-4o-mini'\n[models.defaults]\n"
        "transport='websocket'\n": "models[0] (a).defaults.transport",
    }
    for text, needle in cases.items():
        path = tmp_path / "gateway.toml"
        path.write_text(text)
        with pytest.raises(ConfigError) as info:
            load_gateway_config(path)
        assert needle in str(info.value), (text, str(info.value))


_ENTRY = "[[models]]\nname='a'\nupstream='openai:gpt-4o-mini'\n"


@pytest.mark.parametrize(
    ("text", "meant"),
    [
        ("regsitry = true\n" + _ENTRY, "registry"),
        (_ENTRY + "deployment = 'east'\nwieght = 2\n", "weight"),
        (_ENTRY + "[models.price]\ninput = 1\noutput = 2\n", "prices"),
        (_ENTRY + "[models.prices]\ninput = 1\noutput = 2\ncache_reads = 1\n", "cache_read"),
        ("[keys]\nstor = '/tmp/x.db'\n" + _ENTRY, "store"),
    ],
)
def test_a_misspelt_config_field_names_the_one_it_meant(
    tmp_path: Path, text: str, meant: str
) -> None:
    """A typo in a field (a deployment's ``weight``, a table's name) says which field
    it likely is, in whichever table it is, not only that the field is unknown."""
    path = tmp_path / "gateway.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_gateway_config(path)
    assert f"did you mean {meant!r}?" in str(info.value), str(info.value)


@pytest.fixture(scope="module")
def upstream() -> Iterator[FakeProvider]:
    with FakeProvider() as fake:
        yield fake


def _config(tmp_path: Path, upstream: FakeProvider) -> Path:
    path = tmp_path / "gateway.toml"
    path.write_text(
        f"""
[[models]]
name = "team-fast"
upstream = "openai:gpt-4o-mini"
base_url = "{upstream.base_url("ok", "openai-chat", "cfg")}"
api_key_env = "TEAM_KEY"
headers = {{ "x-team" = "search" }}
[models.defaults]
temperature = 0.25
max_tokens = 77

[[models]]
name = "vllm"
api = "openai-chat"
id = "meta-llama/Llama-3.1-8B-Instruct"
base_url = "{upstream.base_url("ok", "openai-chat", "vllm")}"
"""
    )
    return path


def test_served_models_take_key_headers_and_defaults_from_the_config(
    tmp_path: Path, upstream: FakeProvider
) -> None:
    gateway = load_gateway_config(_config(tmp_path, upstream))
    backend = ProviderBackend(
        environ={"TEAM_KEY": "sk-team", "OPENAI_API_KEY": "sk-other"},
        served=gateway.models,
        registry=gateway.registry,
    )
    with (
        Server(App(backend, ServerConfig())) as server,
        openai.OpenAI(base_url=server.url + "/v1", api_key="-", max_retries=0) as client,
    ):
        assert [m.id for m in client.models.list()] == ["team-fast", "vllm"]
        reply = client.chat.completions.create(model="team-fast", messages=USER, temperature=0.9)  # type: ignore[arg-type]
        assert reply.choices[0].message.content == "Hello, world — café 🙂!"
        client.chat.completions.create(model="vllm", messages=USER)  # type: ignore[arg-type]
        with pytest.raises(openai.NotFoundError):
            client.chat.completions.create(model="openai:gpt-4o-mini", messages=USER)  # type: ignore[arg-type]
    sent = [r for r in upstream.requests if "/cfg/" in r.path][-1]
    assert sent.headers["authorization"] == "Bearer sk-team"
    assert sent.headers["x-team"] == "search"
    body = json.loads(sent.body)
    assert (body["model"], body["temperature"]) == ("gpt-4o-mini", 0.9)  # the client wins
    assert body["max_completion_tokens"] == 77  # the default fills in
    keyless = [r for r in upstream.requests if "/vllm/" in r.path][-1]
    assert "authorization" not in keyless.headers  # no key named, none sent


def test_one_name_in_several_entries_is_a_pool_of_deployments_each_with_its_key(
    tmp_path: Path, upstream: FakeProvider
) -> None:
    path = tmp_path / "pool.toml"
    path.write_text(
        f"""
cooldown = 7
max_cooldown = 90

[[models]]
name = "fast"
upstream = "openai:gpt-4o-mini"
base_url = "{upstream.base_url("500", "openai-chat", "pool-east")}"
api_key_env = "EAST_KEY"
deployment = "east"
weight = 3

[[models]]
name = "fast"
upstream = "openai:gpt-4o-mini"
base_url = "{upstream.base_url("ok", "openai-chat", "pool-west")}"
api_key_env = "WEST_KEY"
"""
    )
    gateway = load_gateway_config(path)
    assert [(s.deployment, s.weight) for s in gateway.models] == [("east", 3.0), ("fast#2", 1.0)]
    assert (gateway.cooldown.default, gateway.cooldown.longest) == (7.0, 90.0)
    backend = ProviderBackend(
        environ={"EAST_KEY": "sk-east", "WEST_KEY": "sk-west"},
        served=gateway.models,
        registry=gateway.registry,
        cooldown=gateway.cooldown,
    )
    with (
        Server(App(backend, ServerConfig())) as server,
        openai.OpenAI(base_url=server.url + "/v1", api_key="-", max_retries=0) as client,
    ):
        assert [m.id for m in client.models.list()] == ["fast"]
        client.chat.completions.create(model="fast", messages=USER)  # type: ignore[arg-type]
    east = [r for r in upstream.requests if "/pool-east/" in r.path]
    west = [r for r in upstream.requests if "/pool-west/" in r.path]
    assert len(east) == len(west) == 1  # east failed before output: west answered
    assert east[0].headers["authorization"] == "Bearer sk-east"
    assert west[0].headers["authorization"] == "Bearer sk-west"


def test_the_proxy_provider_needs_no_token_when_the_server_needs_none(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("STREAMFN_PROXY_TOKEN", raising=False)
    with Server(App(EventsBackend(STREAMS), ServerConfig())) as server:
        model = Model(id="demo-text", provider="proxy", api="proxy", base_url=server.url)

        async def run() -> list[object]:
            async with sf_asyncio.stream(model, Context.of("hi"), Options()) as events:
                return [e async for e in events]

        events = asyncio.run(run())
    assert isinstance(events[-1], Done)


@pytest.mark.parametrize(
    "extra", [["--workers", "2"], ["--shell", "trio"]], ids=["workers", "trio"]
)
def test_workers_share_one_socket_and_stop_cleanly_on_sigterm(
    tmp_path: Path, upstream: FakeProvider, extra: list[str]
) -> None:
    """``--workers 2`` on asyncio, and one process on trio: both answer and stop on SIGTERM."""
    code = "import sys; from streamfn.cli import main; sys.exit(main())"
    args = ["serve", "--no-local", "--config", str(_config(tmp_path, upstream))]
    env = {**os.environ, "TEAM_KEY": "sk-team"}
    proc = subprocess.Popen(
        [sys.executable, "-c", code, *args, "--port", "0", *extra],
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        match = re.search(r"http://127\.0\.0\.1:(\d+)", line)
        assert match, line
        url = f"http://127.0.0.1:{match.group(1)}"
        deadline = time.monotonic() + 60
        answers = 0
        with openai.OpenAI(base_url=url + "/v1", api_key="-", max_retries=0, timeout=5) as client:
            while answers < 4 and time.monotonic() < deadline:
                try:
                    client.chat.completions.create(model="team-fast", messages=USER)  # type: ignore[arg-type]
                    answers += 1
                except openai.APIConnectionError:
                    time.sleep(0.1)  # the workers are still starting
        assert answers == 4
        children = subprocess.run(
            ["pgrep", "-P", str(proc.pid)], capture_output=True, text=True, check=False
        ).stdout.split()
        if "--workers" in extra:  # two workers (and multiprocessing's resource tracker)
            assert len(children) >= 2
        else:
            assert f"shell: {extra[-1]}" in line
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stderr is not None:
            proc.stderr.close()


def test_chat_and_serve_can_point_a_provider_at_a_custom_upstream(
    upstream: FakeProvider,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-cli")
    url = upstream.base_url("ok", "openai-chat", "cli")
    assert cli.main(["chat", "-m", "openai:gpt-4o-mini", "--base-url", url, "hi"]) == 0
    assert "Hello, world — café 🙂!" in capsys.readouterr().out
    assert upstream.hits("cli") == 1
    backend = ProviderBackend(environ={"OPENAI_API_KEY": "sk-cli"}, base_urls={"openai": url})
    with (
        Server(App(backend, ServerConfig())) as server,
        openai.OpenAI(base_url=server.url + "/v1", api_key="-", max_retries=0) as client,
    ):
        client.chat.completions.create(model="openai:gpt-4o-mini", messages=USER)  # type: ignore[arg-type]
    assert upstream.hits("cli") == 2
    assert cli.main(["chat", "--base-url", url, "hi"]) == 2  # the local model has no upstream


@pytest.mark.parametrize("shell", ["asyncio", "trio"])
def test_the_gateway_keeps_a_warm_upstream_connection_per_stream(shell: str) -> None:
    """50 concurrent streams to one upstream come back to 50 pooled connections, not 8."""
    from streamfn.cli._serve_client import upstream_client

    client = upstream_client(shell, {}, 50)
    assert client.max_idle_per_host == 50
    assert type(client).__module__ == f"streamfn.io_{shell}._client"


def test_default_model_flag_reaches_the_front_end_routes() -> None:
    import argparse

    from streamfn.cli import _serve as serve
    from streamfn.cli import _serve_flags as serve_flags

    parser = argparse.ArgumentParser()
    serve_flags.configure(parser)
    for argv, expected in ((["--default-model", "demo-text"], "demo-text"), ([], None)):
        app = serve._app(parser.parse_args(argv), EventsBackend(STREAMS))
        assert app.config.default_model == expected


@pytest.mark.parametrize(
    ("flag", "field", "given", "default"),
    [("--send-timeout", "send_timeout", 2.5, 30.0), ("--max-stream-seconds", "max_stream_seconds", 60.0, 3600.0)],
)  # fmt: skip
def test_time_bounds_reach_both_shells_and_cannot_be_switched_off(
    capsys: pytest.CaptureFixture[str], flag: str, field: str, given: float, default: float
) -> None:
    import argparse

    from streamfn.cli import _serve as serve
    from streamfn.cli import _serve_flags as serve_flags

    parser = argparse.ArgumentParser()
    serve_flags.configure(parser)
    for argv, expected in (([flag, str(given)], given), ([], default)):
        app = serve._app(parser.parse_args(argv), EventsBackend(STREAMS))
        assert getattr(app.config, field) == expected
    # one set of connection flags for asyncio and trio alike
    hosting = serve._hosting(parser.parse_args(["--shell", "trio", "--max-connections", "7"]))
    assert hosting["max_connections"] == 7
    # the bound cannot be switched off by accident
    with pytest.raises(SystemExit) as exited:
        _serve("--no-local", flag, "0")
    assert exited.value.code == 2
    assert flag in capsys.readouterr().err
    with pytest.raises(ValueError, match=field):
        ServerConfig(**{field: 0})
