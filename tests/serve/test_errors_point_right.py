"""Errors that point the right way: flag values are usage errors naming the flag; a
streamfn server that lacks an upstream key says so; the proxy's 401 names the client's
token variable; ``--base-url PROVIDER=URL`` reaches config models; ``/v1/models`` lists
what the server can serve."""

from __future__ import annotations

import argparse
import logging
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest
from loopback_server import KEY, Server, provider_backend

from streamfn import cli
from streamfn.asgi import App, ServerConfig
from streamfn.asgi._backends import RouterBackend
from streamfn.cli._serve_config import ConfigError, load_gateway_config, with_base_urls

pytestmark = pytest.mark.usefixtures("shell")


@pytest.mark.parametrize("value", ["localhost:9", "ftp://x", "http://", "http://h:port"])
def test_a_bad_base_url_is_a_usage_error_naming_the_flag(
    value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["chat", "-m", "openai:gpt-4o-mini", "--base-url", value, "Hi"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"streamfn: --base-url {value!r}") and err.count("\n") == 1
    assert "please report it" not in err
    assert cli.main(["serve", "--no-local", "--base-url", f"openai={value}"]) == 2
    assert "--base-url openai=" in capsys.readouterr().err


def test_local_flags_on_a_provider_and_provider_flags_on_the_local_model_are_usage_errors(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert cli.main(["chat", "--base-url", "http://x", "Hi"]) == 2
    assert "--base-url and --api-key-env are for providers" in capsys.readouterr().err
    assert cli.main(["chat", "-m", "openai:gpt-4o", "--model-dir", str(tmp_path), "Hi"]) == 2
    assert "--model-dir is for the local model" in capsys.readouterr().err
    assert cli.main(["chat", "--temperature", "-1", "Hi"]) == 2
    assert "--temperature" in capsys.readouterr().err


@pytest.fixture(scope="module")
def keyless() -> Iterator[Server]:
    """A streamfn server with no upstream key at all, and a token of its own."""
    backend = provider_backend(environ={})
    with Server(App(RouterBackend(None, backend), ServerConfig(api_key=KEY))) as server:
        yield server


def _chat_through(server: Server, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {"PATH": "/usr/bin:/bin", "NO_COLOR": "1", **env}
    chat = ["chat", "-m", "proxy:openai:gpt-4o-mini", "--base-url", server.url, "Hi"]
    return subprocess.run(
        [sys.executable, "-m", "streamfn", *chat],
        capture_output=True,
        text=True,
        env=clean,
        timeout=120,
        check=False,
    )


def test_a_server_without_its_upstream_key_says_the_operator_must_fix_it(
    keyless: Server,
) -> None:
    done = _chat_through(keyless, STREAMFN_PROXY_TOKEN=KEY)
    assert done.returncode == 1
    assert "no upstream key for this model" in done.stderr
    assert "operator must set" in done.stderr
    assert "check the API key" not in done.stderr  # the client's key is not at fault


def test_the_proxys_401_names_the_token_variable(keyless: Server) -> None:
    done = _chat_through(keyless)  # no STREAMFN_PROXY_TOKEN
    assert done.returncode == 1
    assert "STREAMFN_PROXY_TOKEN" in done.stderr
    wrong = _chat_through(keyless, STREAMFN_PROXY_TOKEN="not-it")
    assert "STREAMFN_PROXY_TOKEN" in wrong.stderr


def test_a_base_url_without_or_with_a_second_v1_says_which_the_sdk_wants(
    keyless: Server,
) -> None:
    """The two SDKs disagree on /v1: OpenAI's base URL carries it, Anthropic's must
    not. Either mistake is a 404 that says how the base URL should read."""
    import anthropic

    with (
        openai.OpenAI(base_url=keyless.url, api_key=KEY, max_retries=0) as client,
        pytest.raises(openai.NotFoundError, match=r"did you mean /v1/chat/completions\?"),
    ):
        client.chat.completions.create(model="local", messages=[{"role": "user", "content": "Hi"}])
    with (
        anthropic.Anthropic(base_url=keyless.url + "/v1", api_key=KEY, max_retries=0) as other,
        pytest.raises(anthropic.NotFoundError, match="without /v1"),
    ):
        other.messages.create(
            model="local", max_tokens=8, messages=[{"role": "user", "content": "Hi"}]
        )


def test_models_lists_only_what_the_server_can_serve() -> None:
    without = provider_backend(environ={}).list_models()
    assert not any(name.startswith(("openai:", "anthropic:")) for name in without)
    with_openai = provider_backend(environ={"OPENAI_API_KEY": "k"}).list_models()
    assert "openai:gpt-4o-mini" in with_openai
    assert not any(name.startswith("anthropic:") for name in with_openai)
    everything = provider_backend(environ={}, list_all=True).list_models()
    assert "openai:gpt-4o-mini" in everything and "anthropic:claude-sonnet-4-5" in everything


def test_models_over_http_lists_keyed_models_only(keyless: Server) -> None:
    with openai.OpenAI(base_url=keyless.url + "/v1", api_key=KEY, max_retries=0) as client:
        ids = [m.id for m in client.models.list()]
    assert not any(i.startswith("openai:") for i in ids)


def test_base_url_applies_to_config_models_of_that_provider(tmp_path: Path) -> None:
    path = tmp_path / "gateway.toml"
    path.write_text(
        "[[models]]\nname='fast'\nupstream='openai:gpt-4o-mini'\n"
        "[[models]]\nname='claude'\nupstream='anthropic:claude-sonnet-4-5'\n"
    )
    moved = with_base_urls(load_gateway_config(path), {"openai": "http://127.0.0.1:4000/v1"})
    urls = {s.name: s.model.base_url for s in moved.models}
    assert urls["fast"] == "http://127.0.0.1:4000/v1"
    assert urls["claude"] == "https://api.anthropic.com"
    path.write_text(
        "[[models]]\nname='own'\nupstream='openai:gpt-4o-mini'\nbase_url='http://box:1/v1'\n"
    )
    with pytest.raises(ConfigError, match="sets its own base_url"):
        with_base_urls(load_gateway_config(path), {"openai": "http://127.0.0.1:4000/v1"})


def test_serve_refuses_a_base_url_that_contradicts_the_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "gateway.toml"
    path.write_text(
        "[[models]]\nname='own'\nupstream='openai:gpt-4o-mini'\nbase_url='http://box:1/v1'\n"
    )
    moved = ["--base-url", "openai=http://127.0.0.1:4000/v1"]
    code = cli.main(["serve", "--no-local", "--port", "0", "--config", str(path), *moved])
    assert code == 2
    err = capsys.readouterr().err
    assert "'own'" in err and "drop one of the two" in err


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        ("--port", "70000"),
        ("--port", "-5"),
        ("--workers", "0"),
        ("--max-concurrency", "0"),
        ("--max-connections", "0"),
        ("--max-body-bytes", "0"),
        ("--head-timeout", "-1"),
        ("--keepalive", "0"),
        ("--shutdown-grace", "nan"),
        ("--max-unsent-bytes", "-1"),
        ("--max-body-bytes", "8MB"),
        ("--max-stream-seconds", "1h"),
        ("--max-stream-seconds", "100000"),  # over a day: reservations would hold as long
    ],
)
def test_serve_flag_values_are_usage_errors_naming_the_flag(
    flag: str, value: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("STREAMFN_SERVER_API_KEY", raising=False)
    with pytest.raises(SystemExit) as caught:
        # a network bind without a token: were the value taken, the server would stop
        # there (a usage error, no SystemExit) rather than serve
        cli.main(["serve", "--no-local", "--host", "0.0.0.0", flag, value])
    assert caught.value.code == 2
    assert f"argument {flag}: " in capsys.readouterr().err


def test_sizes_take_the_units_their_help_gives_and_durations_say_seconds(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The help gives defaults as 8 MiB and 256 MiB: a size written so is taken; a
    duration written 1h is refused saying how to write it in seconds."""
    from streamfn.cli._serve_flags import configure

    parser = argparse.ArgumentParser()
    configure(parser)
    args = parser.parse_args(
        ["--max-body-bytes", "8MiB", "--max-buffered-bytes", "1 GiB", "--max-unsent-bytes", "512kib"]
    )
    assert (args.max_body_bytes, args.max_buffered_bytes, args.max_unsent_bytes) == (
        8 << 20,
        1 << 30,
        512 << 10,
    )
    assert parser.parse_args(["--max-body-bytes", "1000"]).max_body_bytes == 1000
    with pytest.raises(SystemExit):
        cli.main(["serve", "--no-local", "--host", "0.0.0.0", "--max-stream-seconds", "1h"])
    assert "write 3600 for an hour" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["serve", "--no-local", "--host", "0.0.0.0", "--max-body-bytes", "8MB"])
    assert "KiB, MiB, GiB" in capsys.readouterr().err


def test_the_servers_missing_key_line_tells_a_cli_operator_what_to_set(
    keyless: Server, caplog: pytest.LogCaptureFixture
) -> None:
    """Run by ``streamfn serve``, the log names the variable and the config's
    ``api_key_env``, not the Python API's ``Options(api_key=...)``."""
    from streamfn.cli._log_words import command_line_words

    caplog.set_level(logging.ERROR, logger="streamfn")
    with command_line_words():  # what `streamfn serve` (its `main`) runs in
        done = _chat_through(keyless, STREAMFN_PROXY_TOKEN=KEY)
    assert done.returncode == 1
    [line] = [r.getMessage() for r in caplog.records if "no upstream key" in r.getMessage()]
    assert "set OPENAI_API_KEY in the environment streamfn serve runs in" in line
    assert "api_key_env" in line and "Options(" not in line


@pytest.mark.parametrize(
    "same", ["http://box:1/v1", "http://box:1/v1/", "HTTP://BOX:1/v1", "http://box:1/v1//"]
)
def test_a_base_url_equal_to_the_config_entrys_own_is_accepted(tmp_path: Path, same: str) -> None:
    path = tmp_path / "gateway.toml"
    path.write_text(
        "[[models]]\nname='own'\nupstream='openai:gpt-4o-mini'\nbase_url='http://box:1/v1'\n"
    )
    [served] = with_base_urls(load_gateway_config(path), {"openai": same}).models
    assert served.model.base_url.lower().rstrip("/") == "http://box:1/v1"
    for other in ("http://box:2/v1", "https://box:1/v1", "http://box:1/v2", "http://u@box:1/v1"):
        with pytest.raises(ConfigError, match="drop one of the two"):
            with_base_urls(load_gateway_config(path), {"openai": other})


def test_the_default_port_written_or_not_is_the_same_base_url(tmp_path: Path) -> None:
    path = tmp_path / "gateway.toml"
    path.write_text(
        "[[models]]\nname='own'\nupstream='openai:gpt-4o-mini'\n"
        "base_url='https://api.example.com/v1'\n"
    )
    config = load_gateway_config(path)
    assert with_base_urls(config, {"openai": "https://api.example.com:443/v1"}).models
    with pytest.raises(ConfigError):
        with_base_urls(config, {"openai": "http://api.example.com:443/v1"})


def test_a_server_config_allows_streams_of_a_day_at_most() -> None:
    """A client key's reservation outlasts the longest stream, and a crashed worker's
    reservation holds its budget that long: past a day is refused, naming why."""
    from streamfn.asgi import ServerConfig

    assert ServerConfig(max_stream_seconds=86_400.0).max_stream_seconds == 86_400.0
    with pytest.raises(ValueError, match="at most 86400 seconds"):
        ServerConfig(max_stream_seconds=1e9)
