"""The local model reached like any provider: ``model("local")`` through every shell."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("ctranslate2")

import trio
from blocked_imports import blocking
from test_local import _StepCounter
from tiny_model import build_tiny_model

from streamfn import io_asyncio, io_sync, io_trio
from streamfn.core._completion import CompletionError
from streamfn.core._errors import UnknownModel
from streamfn.core._events import Done, Error, ErrorKind, Event, Start, TextDelta
from streamfn.core._messages import Context
from streamfn.core._options import Options
from streamfn.core.catalogue._models import LOCAL_DEFAULT_ID, Model, model
from streamfn.local._model import LocalModel
from streamfn.local._provider import MODEL_DIR_ENV, close_loaded

PROMPT = Context.of("the cat sat on")
OPTIONS = Options(max_tokens=8)


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    yield build_tiny_model(tmp_path_factory.mktemp("provider"))
    close_loaded()


@pytest.fixture(scope="module")
def expected(tiny_dir: Path) -> list[Event]:
    """What `LocalModel` itself streams (greedy: the same every time)."""
    with LocalModel(tiny_dir) as direct:
        return list(direct.stream_sync(PROMPT, OPTIONS))


def test_local_names_resolve_to_the_local_wire_without_loading_anything() -> None:
    for name in ("local", f"local:{LOCAL_DEFAULT_ID}"):
        found = model(name)
        assert (found.provider, found.api, found.id, found.base_url) == (
            "local",
            "local",
            LOCAL_DEFAULT_ID,
            "",
        )
    by_path = model("local:/models/qwen-ct2")
    assert (by_path.api, by_path.id, by_path.base_url) == ("local", "qwen-ct2", "/models/qwen-ct2")
    assert model("local", base_url="/models/x").base_url == "/models/x"
    with pytest.raises(UnknownModel, match="local:/path/to/ctranslate2-model-dir"):
        model("local:qwen")


def _sync(chosen: Model, environ: dict[str, str]) -> list[Event]:
    with io_sync.Client(environ=environ) as client, client.stream(chosen, PROMPT, OPTIONS) as ev:
        return list(ev)


def _collect(client: Any, chosen: Model) -> Any:
    """A coroutine: ``chosen``'s events through an async shell's ``client``."""

    async def collect() -> list[Event]:
        async with client, client.stream(chosen, PROMPT, OPTIONS) as events:
            return [event async for event in events]

    return collect


def _trio(chosen: Model, environ: dict[str, str]) -> list[Event]:
    return trio.run(_collect(io_trio.Client(environ=environ), chosen))


def _asyncio(chosen: Model, environ: dict[str, str]) -> list[Event]:
    return asyncio.run(_collect(io_asyncio.Client(environ=environ), chosen)())


SHELLS = {"sync": _sync, "trio": _trio, "asyncio": _asyncio}


@pytest.mark.parametrize("shell", SHELLS)
def test_every_shell_streams_the_local_model_as_the_model_itself_does(
    shell: str, tiny_dir: Path, expected: list[Event]
) -> None:
    by_path = SHELLS[shell](model(f"local:{tiny_dir}"), {})
    by_env = SHELLS[shell](model("local"), {MODEL_DIR_ENV: str(tiny_dir)})
    assert by_path == by_env == expected
    assert isinstance(expected[0], Start) and expected[0].provider == "local"
    assert isinstance(expected[-1], Done) and expected[-1].stop_reason == "length"


def test_complete_in_every_shell(tiny_dir: Path, expected: list[Event]) -> None:
    chosen = model(f"local:{tiny_dir}")
    text = "".join(e.delta for e in expected if isinstance(e, TextDelta))
    client = io_sync.Client(environ={})
    assert client.complete(chosen, PROMPT, OPTIONS).text == text
    assert trio.run(io_trio.complete, chosen, PROMPT, OPTIONS).text == text
    assert asyncio.run(io_asyncio.complete(chosen, PROMPT, OPTIONS)).text == text


def test_errors_are_the_providers_errors(tiny_dir: Path) -> None:
    """A request the model cannot serve ends in the same `Error` a provider's would."""
    chosen = model(f"local:{tiny_dir}")
    asked = Options(response_schema={"type": "object"})
    with pytest.raises(CompletionError) as caught:
        io_sync.complete(chosen, PROMPT, asked)
    assert caught.value.error.kind is ErrorKind.INVALID_REQUEST
    unknown_knob = Options(extra_body={"presence_penalty": 1.0})
    events = _sync_events(chosen, unknown_knob)
    assert isinstance(events[-1], Error) and "presence_penalty" in events[-1].message


def _sync_events(chosen: Model, options: Options) -> list[Event]:
    with io_sync.stream(chosen, PROMPT, options) as events:
        return list(events)


@pytest.mark.parametrize("shell", ["sync", "trio", "asyncio"])
def test_leaving_early_stops_the_generation_in_every_shell(
    shell: str, tiny_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Breaking out of the loop stops the generation within a token."""
    chosen = model(f"local:{tiny_dir}")
    steps = _StepCounter(monkeypatch)
    long = Options(max_tokens=2000)
    seen: list[Event] = []

    if shell == "sync":
        with io_sync.stream(chosen, PROMPT, long) as events:
            for event in events:
                seen.append(event)
                if isinstance(event, TextDelta):
                    break
    else:
        stream = io_trio.stream if shell == "trio" else io_asyncio.stream

        async def until_text() -> None:
            async with stream(chosen, PROMPT, long) as events:
                async for event in events:
                    seen.append(event)
                    if isinstance(event, TextDelta):
                        break

        trio.run(until_text) if shell == "trio" else asyncio.run(until_text())
    assert isinstance(seen[-1], TextDelta)
    steps.assert_stopped_early(2000)


def test_trio_cancellation_stops_the_local_stream(
    tiny_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chosen = model(f"local:{tiny_dir}")
    steps = _StepCounter(monkeypatch)
    seen: list[Event] = []

    async def main() -> None:
        with trio.CancelScope() as scope:
            async with io_trio.stream(chosen, PROMPT, Options(max_tokens=2000)) as events:
                async for event in events:
                    seen.append(event)
                    if isinstance(event, TextDelta):
                        scope.cancel()
        assert scope.cancelled_caught

    trio.run(main)
    assert not any(isinstance(e, Done) for e in seen)
    steps.assert_stopped_early(2000)


def test_the_repetition_guard_is_asked_per_request_and_checked(tiny_dir: Path) -> None:
    chosen = model(f"local:{tiny_dir}")
    plain = _sync_events(chosen, Options(max_tokens=40))
    guarded = _sync_events(chosen, Options(max_tokens=40, extra_body={"no_repeat_ngram_size": 2}))
    assert isinstance(plain[-1], Done) and isinstance(guarded[-1], Done)

    def text(events: list[Event]) -> str:
        return "".join(e.delta for e in events if isinstance(e, TextDelta))

    assert text(guarded) != text(plain)  # the knob reached CTranslate2
    bad = _sync_events(chosen, Options(extra_body={"repetition_penalty": 0}))
    assert isinstance(bad[-1], Error) and bad[-1].kind is ErrorKind.INVALID_REQUEST


_WITHOUT_LOCAL = """
from streamfn import io_sync
from streamfn.core._messages import Context
from streamfn.core.catalogue._models import model
from streamfn.local._provider import LocalModelError
try:
    io_sync.complete(model("local"), Context.of("hi"))
except LocalModelError as exc:
    print(exc)
"""


def test_without_the_extra_the_error_names_it() -> None:
    done = subprocess.run(
        [sys.executable, "-c", blocking(("ctranslate2", "tokenizers", "jinja2"), _WITHOUT_LOCAL)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "pip install 'streamfn[local]'" in done.stdout
    assert "editable_mode=strict -e '.[local]'" in done.stdout


def test_the_gateway_serves_the_same_answer_as_the_shells(tiny_dir: Path) -> None:
    """``model("proxy:local")`` through `streamfn serve` streams what ``model("local:DIR")``
    streams in this process: the same text, the same stop reason."""
    from loopback_server import KEY, Server, runtime_for

    from streamfn.asgi import App, ServerConfig
    from streamfn.asgi._backends import RouterBackend
    from streamfn.cli._serve_local import LocalBackend

    backend = LocalBackend(tiny_dir, runtime=runtime_for("asyncio"))
    try:
        app = App(RouterBackend(backend, None), ServerConfig(api_key=KEY))
        with Server(app, shell="asyncio") as server:
            keyed = Options(max_tokens=8, api_key=KEY)
            served = io_sync.complete(model("proxy:local", base_url=server.url), PROMPT, keyed)
    finally:
        backend.close()
    here = io_sync.complete(model(f"local:{tiny_dir}"), PROMPT, OPTIONS)
    assert served.text == here.text and served.text
    assert served.stop_reason == here.stop_reason == "length"
