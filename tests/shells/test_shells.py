"""Every shell against a loopback fake provider: faults, TLS, proxy, keep-alive, cancellation.

One suite, parametrized over the trio, the asyncio and the blocking shell, so
they behave the same by test as well as by construction (the blocking one is
driven through `_SyncAsAsync`, the suite's async API over its blocking calls). The oracle for every
body that arrives whole is the pure core: `replay` of the same bytes must
give exactly the events the shell yields.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import signal
import ssl
import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
import trio
from corpus_support import body as corpus_body
from corpus_support import corpus_entries, require_corpus
from fake_provider import WIRE_FORMATS, WRONG_WORDS, ConnectProxy, FakeProvider
from shell_runner import FAST, KEY, SHELLS, blocking, client_class, collect, run

from streamfn.core import (
    CompletionError,
    Context,
    Done,
    Error,
    ErrorKind,
    Event,
    Model,
    Options,
    Start,
    StreamError,
    TextDelta,
    Tool,
    ToolCallStart,
    replay,
)
from streamfn.io_asyncio import Client as AsyncioClient
from streamfn.io_sync import Client as SyncClient
from streamfn.io_trio import Client as TrioClient

PROVIDERS = ["openai-chat", "anthropic"]
PROVIDER_OF = {
    "openai-chat": "openai",
    "anthropic": "anthropic",
    "openai-responses": "openai",
    "gemini": "google",
    "ollama": "ollama",
    "bedrock": "bedrock",
}
#: every wire format the shells drive
WIRES = list(WIRE_FORMATS)


def model_for(server: FakeProvider, fault: str, provider: str, token: str) -> Model:
    return Model(
        id="replay",
        provider=PROVIDER_OF.get(provider, provider),
        api=provider if provider in PROVIDER_OF else "openai-chat",
        base_url=server.base_url(fault, provider, token),
    )


@pytest.fixture(scope="module")
def server() -> Any:
    with FakeProvider(stall=3.0) as srv:
        yield srv


#: how long the stalls last that the cancellation tests interrupt: a third of it bounds
#: a cancellation on any machine, and a cancellation that waits for the stall fails it
STALL = 30.0


@pytest.fixture(scope="module")
def stalling() -> Any:
    """A fake provider whose stalls outlast any cancellation by far (its close ends them)."""
    with FakeProvider(stall=STALL) as srv:
        yield srv


@pytest.fixture(params=SHELLS)
def shell(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(params=PROVIDERS)
def provider(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def expected_events(server: FakeProvider, provider: str, body: bytes | None = None) -> list[Event]:
    return replay(
        provider,
        server.body_for(provider) if body is None else body,
        provider=PROVIDER_OF[provider],
        headers=[("content-type", server.ctype_for(provider))],
    )


def _token(request: pytest.FixtureRequest) -> str:
    return request.node.name.replace("/", "_").replace("[", "_").replace("]", "_")


# -- the fault matrix ---------------------------------------------------------------

WHOLE = ["ok", "ok-length", "ok-close", "drip", "keepalive-comments"]
RECOVERS = ["429-then-ok", "500-then-ok", "overloaded-then-ok"]
#: fault -> (kind, status, attempts, words in the message); attempts with FAST.max_attempts=3
FAILS: dict[str, tuple[ErrorKind, int | None, int, str]] = {
    "401": (ErrorKind.AUTH, 401, 1, "401"),
    "403": (ErrorKind.AUTH, 403, 1, "403"),
    "400-context": (ErrorKind.CONTEXT_OVERFLOW, 400, 1, "context length"),
    "429": (ErrorKind.THROTTLED, 429, 3, "rate limit"),
    "503": (ErrorKind.NETWORK, 503, 3, "503"),
    "stall-first": (ErrorKind.NETWORK, None, 3, "first-byte timeout"),
    "slow-headers": (ErrorKind.NETWORK, None, 3, "first-byte timeout"),
    "close-before-response": (ErrorKind.NETWORK, None, 3, "before a response"),
    "garbage-http": (ErrorKind.NETWORK, None, 3, "malformed HTTP response"),
    "wrong-ctype": (ErrorKind.PROTOCOL, None, 1, "text/html"),
    "big": (ErrorKind.LIMIT, None, 1, "max_response_bytes"),
}
#: output started, then the connection failed: a prefix of the real events, then Error
MIDWAY = {
    "stall-mid": "idle timeout: no data for 0.3 s",
    "reset": "connection lost mid-body",
    "truncated": "connection closed mid-body",
}


@pytest.mark.parametrize("fault", WHOLE)
def test_whole_body_gives_exactly_the_replayed_events(
    shell: str, provider: str, fault: str, server: FakeProvider, request: pytest.FixtureRequest
) -> None:
    model = model_for(server, fault, provider, _token(request))
    events = run(shell, collect, model)
    assert events == expected_events(server, provider)
    assert isinstance(events[-1], Done)


@pytest.mark.parametrize(
    ("fault", "provider"),  # an in-stream overloaded_error is Anthropic's alone
    [(f, p) for f in RECOVERS for p in PROVIDERS if f != "overloaded-then-ok" or p == "anthropic"],
)
def test_an_error_before_any_output_is_retried(
    shell: str, provider: str, fault: str, server: FakeProvider, request: pytest.FixtureRequest
) -> None:
    token = _token(request)
    events = run(shell, collect, model_for(server, fault, provider, token))
    assert events == expected_events(server, provider)
    assert server.hits(token) == 2


@pytest.mark.parametrize("fault", sorted(FAILS))
def test_failures_end_with_the_right_error_kind(
    shell: str, provider: str, fault: str, server: FakeProvider, request: pytest.FixtureRequest
) -> None:
    kind, status, attempts, words = FAILS[fault]
    token = _token(request)
    options = Options(**{**_fields(FAST), "max_response_bytes": 64 << 10})
    events = run(shell, collect, model_for(server, fault, provider, token), options)
    assert len(events) == 2, events  # Start, Error: nothing half-done leaks out
    error = events[-1]
    assert isinstance(error, Error)
    assert error.kind == kind
    assert error.status == status
    assert error.attempts == attempts == server.hits(token)
    assert words.lower() in error.message.lower()
    if fault == "429":
        assert error.retry_after == 0


@pytest.mark.parametrize("fault", sorted(MIDWAY))
def test_a_failure_after_output_started_is_an_error_event_not_a_retry(
    shell: str, provider: str, fault: str, server: FakeProvider, request: pytest.FixtureRequest
) -> None:
    token = _token(request)
    events = run(shell, collect, model_for(server, fault, provider, token))
    error = events[-1]
    assert isinstance(error, Error) and error.kind == ErrorKind.NETWORK
    assert MIDWAY[fault] in error.message
    assert error.attempts == 1 and server.hits(token) == 1
    full = expected_events(server, provider)
    assert len(events) > 2
    assert events[:-1] == full[: len(events) - 1]


@pytest.mark.parametrize("fault", ["no-terminal", "garbage-body"])
def test_a_broken_stream_is_judged_by_the_provider_state_machine(
    shell: str, provider: str, fault: str, server: FakeProvider, request: pytest.FixtureRequest
) -> None:
    """The shell adds nothing of its own when HTTP was fine: same events as replay."""
    token = _token(request)
    events = run(shell, collect, model_for(server, fault, provider, token))
    [raw] = [r for r in server.requests if f"/{token}/" in r.path + "/"][:1]
    assert raw.headers["authorization" if provider == "openai-chat" else "x-api-key"].endswith(KEY)
    error = events[-1]
    assert isinstance(error, Error)
    # the body the server sent, decoded by the pure core, is the oracle
    from fake_provider import UNFINISHED

    body = UNFINISHED[provider] if fault == "no-terminal" else bytes(range(256)) * 4
    expected = expected_events(server, provider, body)
    assert [type(e) for e in events] == [type(e) for e in expected]
    assert events[:-1] == expected[:-1]
    assert error.kind == expected[-1].kind  # type: ignore[union-attr]


def test_connect_failure_is_a_network_error_after_all_attempts(shell: str) -> None:
    with FakeProvider() as closed:
        url = closed.url
    model = Model(id="m", provider="openai", api="openai-chat", base_url=url)
    events = run(shell, collect, model)
    assert isinstance(events[-1], Error)
    assert events[-1].kind == ErrorKind.NETWORK and events[-1].attempts == 3
    assert "connect to 127.0.0.1" in events[-1].message


# -- keep-alive, limits, credentials, secrets -------------------------------------------


def test_keep_alive_reuses_one_connection(shell: str, server: FakeProvider) -> None:
    model = model_for(server, "ok", "openai-chat", "keepalive-" + shell)

    async def three(client: Any) -> tuple[list[list[Event]], int, int]:
        before = server.connections
        runs = [await collect(client, model) for _ in range(3)]
        return runs, server.connections - before, client.idle_connections

    runs, opened, idle = run(shell, three)
    assert runs[0] == runs[1] == runs[2] == expected_events(server, "openai-chat")
    assert opened == 1
    assert idle == 1


def test_breaking_out_closes_the_connection_instead_of_pooling_it(
    shell: str, server: FakeProvider
) -> None:
    model = model_for(server, "drip", "openai-chat", "break-" + shell)

    async def partial(client: Any) -> tuple[list[Event], int, list[Event]]:
        seen: list[Event] = []
        async with client.stream(model, Context.of("hi"), FAST) as events:
            async for event in events:
                seen.append(event)
                if isinstance(event, TextDelta):
                    break
        idle = client.idle_connections
        return seen, idle, await collect(client, model)

    seen, idle, again = run(shell, partial)
    assert isinstance(seen[-1], TextDelta)
    assert idle == 0
    assert again == expected_events(server, "openai-chat")


def test_a_missing_key_fails_like_a_rejected_one_before_connecting(
    shell: str, server: FakeProvider
) -> None:
    """No key: the stream is ``Start`` then ``Error(kind="auth")`` naming the variable,
    so ``raise_on_error=True`` raises `StreamError` and ``complete()`` `CompletionError`,
    exactly as for a 401, and nothing is sent."""
    model = model_for(server, "ok", "openai-chat", "nokey")
    before = server.connections

    async def attempt(client: Any) -> tuple[list[Event], StreamError, CompletionError]:
        events = await collect(client, model, Options())
        with pytest.raises(StreamError) as raised:
            async with client.stream(model, Context.of("hi"), raise_on_error=True) as stream:
                async for _ in stream:
                    pass
        with pytest.raises(CompletionError) as completed:
            await client.complete(model, Context.of("hi"))
        return events, raised.value, completed.value

    events, raised, completed = run(shell, attempt)
    assert [type(e) for e in events] == [Start, Error]
    error = events[-1]
    assert isinstance(error, Error) and error.kind is ErrorKind.AUTH
    assert "OPENAI_API_KEY" in error.message
    assert raised.kind is ErrorKind.AUTH and "OPENAI_API_KEY" in str(raised)
    assert completed.kind is ErrorKind.AUTH and completed.message.text == ""
    assert server.connections == before


def test_key_from_the_environment_is_sent(shell: str, server: FakeProvider) -> None:
    model = model_for(server, "ok", "openai-chat", "envkey-" + shell)

    async def with_env(_: Any) -> list[Event]:
        async with client_class(shell)(environ={"OPENAI_API_KEY": "sk-from-env"}) as client:
            return await collect(client, model, Options(idle_timeout=2))

    assert isinstance(run(shell, with_env)[-1], Done)
    sent = [r for r in server.requests if "envkey-" + shell in r.path]
    assert sent[-1].headers["authorization"] == "Bearer sk-from-env"


def test_no_secret_in_logs_or_event_reprs(
    shell: str, server: FakeProvider, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="streamfn")
    events: list[Event] = []
    for fault in ("ok", "401", "429"):
        events += run(shell, collect, model_for(server, fault, "openai-chat", "secret-" + fault))
    assert any("HTTP 401" in r.getMessage() for r in caplog.records)
    assert "event " in caplog.text  # per-event debug logging was on
    assert KEY not in caplog.text
    assert KEY[-12:] not in caplog.text
    assert all(KEY not in repr(e) for e in events)


def test_complete_folds_the_stream(shell: str, server: FakeProvider) -> None:
    model = model_for(server, "ok", "openai-chat", "complete")

    async def go(client: Any) -> Any:
        return await client.complete(model, Context.of("hi"), FAST)

    message = run(shell, go)
    text = "".join(
        e.delta for e in expected_events(server, "openai-chat") if isinstance(e, TextDelta)
    )
    assert message.content[0].text == text


def test_total_timeout_bounds_a_dripping_stream(shell: str, server: FakeProvider) -> None:
    model = model_for(server, "keepalive-comments", "openai-chat", "total-" + shell)
    options = Options(**{**_fields(FAST), "total_timeout": 0.3})
    events = run(shell, collect, model, options)
    assert isinstance(events[-1], Error)
    assert events[-1].message.startswith("total timeout")


# -- cancellation ---------------------------------------------------------------------


def test_trio_cancel_scope_closes_the_socket_at_once(stalling: FakeProvider) -> None:
    model = model_for(stalling, "stall-mid", "openai-chat", "cancel-trio")
    seen: list[Event] = []

    async def main() -> float:
        async with TrioClient(environ={}) as client:
            with trio.CancelScope() as scope:
                async with client.stream(model, Context.of("hi"), Options(api_key=KEY)) as ev:
                    async for event in ev:
                        if not seen:  # cancelled while it waits for the stalled rest
                            scope.deadline = trio.current_time() + 0.2
                        seen.append(event)
            assert scope.cancelled_caught
            assert client.idle_connections == 0
            return trio.current_time() - scope.deadline

    assert trio.run(main) < STALL / 3
    assert seen and not isinstance(seen[-1], Error)  # nothing emitted after the cancel


def test_asyncio_task_cancellation_propagates_and_closes(stalling: FakeProvider) -> None:
    model = model_for(stalling, "stall-mid", "openai-chat", "cancel-asyncio")
    seen: list[Event] = []

    async def consume(client: AsyncioClient) -> None:
        async with client.stream(model, Context.of("hi"), Options(api_key=KEY)) as events:
            async for event in events:
                seen.append(event)

    async def main() -> float:
        async with AsyncioClient(environ={}) as client:
            task = asyncio.create_task(consume(client))
            while not seen and not task.done():
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.2)  # cancelled while it waits for the stalled rest
            started = time.monotonic()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert client.idle_connections == 0
            return time.monotonic() - started

    assert asyncio.run(main()) < STALL / 3
    assert seen and not isinstance(seen[-1], Error)


def test_keyboard_interrupt_in_a_blocking_read_closes_the_socket_at_once(
    stalling: FakeProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C while the blocking shell waits for bytes: the interrupt reaches the
    caller, and the socket is already closed when it does (not pooled, not left
    to the garbage collector)."""
    import streamfn.io_sync._client as sync_client

    opened: list[Any] = []
    connect = sync_client.connect

    def recording_connect(*args: Any) -> Any:
        opened.append(connect(*args))
        return opened[-1]

    monkeypatch.setattr(sync_client, "connect", recording_connect)
    model = model_for(stalling, "stall-mid", "openai-chat", "interrupt-sync")
    seen: list[Event] = []

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, interrupt)
    try:
        with SyncClient(environ={}) as client:
            interrupted = 0.0
            with (
                pytest.raises(KeyboardInterrupt),
                client.stream(model, Context.of("hi"), Options(api_key=KEY)) as events,
            ):
                for event in events:
                    if not seen:  # interrupted while it waits for the stalled rest
                        signal.setitimer(signal.ITIMER_REAL, 0.2)
                        interrupted = time.monotonic() + 0.2
                    seen.append(event)
            assert time.monotonic() - interrupted < STALL / 3
            [sock] = opened
            assert sock.fileno() == -1  # closed before the interrupt reached us
            assert client.idle_connections == 0
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert seen and not isinstance(seen[-1], Error)


# -- TLS and the HTTPS proxy ------------------------------------------------------------


@pytest.fixture(scope="module")
def tls() -> Any:
    trustme = pytest.importorskip("trustme")
    ca = trustme.CA()
    cert = ca.issue_cert("localhost")
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    cert.configure_cert(server_ctx)
    names: list[str | None] = []
    server_ctx.sni_callback = lambda sock, name, ctx: names.append(name)  # type: ignore[assignment,misc]
    client_ctx = ssl.create_default_context()
    ca.configure_trust(client_ctx)
    with FakeProvider(tls=server_ctx) as srv:
        yield srv, client_ctx, names


def _tls_run(shell: str, fn: Callable[..., Awaitable[Any]], **client_kwargs: Any) -> Any:
    cls = client_class(shell)

    async def main() -> Any:
        async with cls(**client_kwargs) as client:
            return await fn(client)

    if shell == "sync":
        return blocking(main(), 10.0)
    return trio.run(main) if shell == "trio" else asyncio.run(main())


def test_tls_with_a_trusted_ca_and_sni(shell: str, tls: Any) -> None:
    srv, client_ctx, names = tls
    model = model_for(srv, "ok", "openai-chat", "tls")
    events = _tls_run(shell, lambda c: collect(c, model), ssl_context=client_ctx, environ={})
    assert events == expected_events(srv, "openai-chat")
    assert names[-1] == "localhost"


def test_tls_verification_failure_is_a_clear_error(shell: str, tls: Any) -> None:
    srv, _, _ = tls
    model = model_for(srv, "ok", "openai-chat", "untrusted")
    options = Options(**{**_fields(FAST), "max_attempts": 1})
    events = _tls_run(shell, lambda c: collect(c, model, options), environ={})
    error = events[-1]
    assert isinstance(error, Error) and error.kind == ErrorKind.NETWORK
    assert "TLS handshake with localhost" in error.message
    assert "certificate verify failed" in error.message


def test_https_proxy_connect_tunnel(shell: str, tls: Any) -> None:
    srv, client_ctx, _ = tls
    model = model_for(srv, "ok", "openai-chat", "proxied")
    with ConnectProxy() as proxy:
        environ = {"HTTPS_PROXY": f"http://user:p%40ss@127.0.0.1:{proxy.port}"}
        events = _tls_run(
            shell, lambda c: collect(c, model), ssl_context=client_ctx, environ=environ
        )
        direct = _tls_run(
            shell,
            lambda c: collect(c, model),
            ssl_context=client_ctx,
            environ=environ | {"NO_PROXY": "example.com,localhost"},
        )
    assert events == direct == expected_events(srv, "openai-chat")
    assert len(proxy.connects) == 1
    assert proxy.connects[0].path == f"localhost:{srv.port}"
    auth = proxy.connects[0].headers["proxy-authorization"]
    assert base64.b64decode(auth.split()[1]) == b"user:p@ss"


# -- the recorded corpus through a real socket --------------------------------------------


@pytest.mark.parametrize("entry", corpus_entries("openai-chat", "anthropic")[:12])
def test_corpus_recordings_stream_like_replay(entry: Any, server: FakeProvider) -> None:
    entry = require_corpus(entry)
    api = entry["protocol"]
    data = corpus_body(entry)
    name = "corpus-" + entry["file"].replace("/", "_")
    server.register_body(name, data)
    model = Model(
        id="replay", provider=entry["provider"], api=api, base_url=server.base_url("ok", name)
    )
    expected = replay(
        api, data, provider=entry["provider"], headers=[("content-type", "text/event-stream")]
    )
    # the recording's tools declared, as the agent that made it did (a call of a tool
    # never declared is flagged)
    names = {e.name for e in expected if isinstance(e, ToolCallStart)}
    tools = [Tool(name=name, parameters={}) for name in sorted(names)]
    context = Context(messages=Context.of("hi").messages, tools=tools)
    for shell in SHELLS:
        options = Options(api_key=KEY, idle_timeout=5)
        assert run(shell, collect, model, options, context) == expected


def _fields(options: Options) -> dict[str, Any]:
    return {name: getattr(options, name) for name in options.__struct_fields__}


# -- connections that never cross answers: every wire format, both shells ------------------
#
# Each case is one loopback exchange (or three) with short timers; the faults are
# fake_provider's "extra-*", "idle-408", "late-tail", "oversized", "redirect-*",
# the compression faults and "429-date-*".


@pytest.fixture(params=WIRES)
def wire(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def pause(client: Any, seconds: float) -> None:
    await client._sleep(seconds)


def _wrong_text(events: list[Event]) -> bool:
    text = "".join(e.delta for e in events if isinstance(e, TextDelta))
    return any(w.strip() in text for w in WRONG_WORDS)


@pytest.mark.parametrize("fault", ["extra-same-packet", "extra-later", "idle-408"])
def test_bytes_after_an_answer_never_reach_the_next_call(
    shell: str, wire: str, fault: str, server: FakeProvider, request: pytest.FixtureRequest
) -> None:
    """A second response (same write or 50 ms later) or an idle 408 + close is never
    read as the next call's answer; the next call gets its own, first time."""
    token = _token(request)
    first_model = model_for(server, fault, wire, token)
    second_model = model_for(server, "ok-length", wire, token + "-next")
    once = Options(**{**_fields(FAST), "max_attempts": 1})

    async def two(client: Any) -> tuple[list[Event], list[Event], int]:
        before = server.connections
        first = await collect(client, first_model)
        await pause(client, 0.15)  # the late bytes have arrived by now
        second = await collect(client, second_model, once)
        return first, second, server.connections - before

    first, second, opened = run(shell, two)
    expected = expected_events(server, wire)
    assert first == expected
    assert not _wrong_text(second)
    assert second == expected
    assert server.hits(token + "-next") == 1
    assert opened == 2  # the first socket was not reused


def test_stopping_at_done_still_returns_the_connection_to_the_pool(
    shell: str, wire: str, server: FakeProvider, request: pytest.FixtureRequest
) -> None:
    """The end of the HTTP body comes 20 ms after the provider's last event; a caller
    that breaks out at Done must not cost a new connection per call."""
    model = model_for(server, "late-tail", wire, _token(request))

    async def three(client: Any) -> tuple[list[list[Event]], int, int]:
        before = server.connections
        runs = []
        for _ in range(3):
            seen: list[Event] = []
            async with client.stream(model, Context.of("hi"), FAST) as events:
                async for event in events:
                    seen.append(event)
                    if isinstance(event, Done):
                        break
            runs.append(seen)
        return runs, server.connections - before, client.idle_connections

    runs, opened, idle = run(shell, three)
    assert runs[0] == runs[1] == runs[2] == expected_events(server, wire)
    assert (opened, idle) == (1, 1)


def test_a_cap_error_closes_the_connection_at_once(
    shell: str, wire: str, server: FakeProvider, request: pytest.FixtureRequest
) -> None:
    """An 8 MiB line/frame on a live socket: `limit`, and the socket is closed, not
    drained and pooled."""
    token = _token(request)
    model = model_for(server, "oversized", wire, token)
    options = Options(**{**_fields(FAST), "max_line_bytes": 64 << 10, "max_event_bytes": 1 << 20})

    async def go(client: Any) -> tuple[list[Event], int]:
        events = await collect(client, model, options)
        return events, client.idle_connections

    events, idle = run(shell, go)
    error = events[-1]
    assert isinstance(error, Error) and error.kind == ErrorKind.LIMIT, error
    assert error.attempts == 1 == server.hits(token)
    assert idle == 0


def _redirect_case(shell: str, wire: str, status: int, server: FakeProvider, token: str) -> None:
    events = run(shell, collect, model_for(server, f"redirect-{status}", wire, token))
    assert len(events) == 2, events
    error = events[-1]
    assert isinstance(error, Error)
    assert error.kind == ErrorKind.INVALID_REQUEST and error.status == status
    assert f"redirect to {server.url}/ok/{wire}/redirected?key=***" in error.message
    assert "SECRET-IN-QUERY" not in error.message
    assert error.attempts == 1 == server.hits(token)  # the bill: one request
    assert server.hits("redirected") == 0  # never followed, as POST nor as GET


def test_a_redirect_is_an_invalid_request_naming_the_location(
    shell: str, wire: str, server: FakeProvider, request: pytest.FixtureRequest
) -> None:
    _redirect_case(shell, wire, 307, server, _token(request))


@pytest.mark.parametrize("status", [301, 302, 303, 308])
def test_no_redirect_status_turns_the_post_into_a_get(
    shell: str, status: int, server: FakeProvider, request: pytest.FixtureRequest
) -> None:
    _redirect_case(shell, "openai-chat", status, server, _token(request))


@pytest.mark.parametrize("fault", ["gzip", "deflate", "deflate-raw"])
def test_a_body_compressed_anyway_is_decoded(
    shell: str, wire: str, fault: str, server: FakeProvider, request: pytest.FixtureRequest
) -> None:
    token = _token(request)
    events = run(shell, collect, model_for(server, fault, wire, token))
    assert events == expected_events(server, wire)
    assert server.hits(token) == 1
    [sent] = [r for r in server.requests if f"/{token}/" in r.path + "/"]
    assert sent.headers["accept-encoding"] == "identity"


#: fault -> (kind, words in the message)
UNDECODABLE = {
    "gzip-bomb": (ErrorKind.LIMIT, "max_response_bytes"),
    "gzip-corrupt": (ErrorKind.PROTOCOL, "corrupt gzip body"),
    "br": (ErrorKind.PROTOCOL, "unsupported Content-Encoding 'br'"),
}


@pytest.mark.parametrize("fault", sorted(UNDECODABLE))
def test_a_body_that_cannot_be_decoded_is_never_requested_again(
    shell: str, wire: str, fault: str, server: FakeProvider, request: pytest.FixtureRequest
) -> None:
    """The response arrived: a retry would bill the same generation again."""
    kind, words = UNDECODABLE[fault]
    token = _token(request)
    # the server compresses the bomb on first use: give it time for that
    options = Options(
        **{**_fields(FAST), "max_response_bytes": 1 << 20, "first_byte_timeout": 10.0}
    )
    events = run(shell, collect, model_for(server, fault, wire, token), options)
    assert len(events) == 2, events
    error = events[-1]
    assert isinstance(error, Error) and error.kind == kind
    assert words in error.message
    assert error.attempts == 1 == server.hits(token)


def test_retry_after_as_an_http_date_is_waited(
    shell: str, server: FakeProvider, request: pytest.FixtureRequest
) -> None:
    """``Date: T`` and ``Retry-After: <T + 1 s>``: the retry waits the full second
    (the backoff alone would be 0.05 s)."""
    token = _token(request)
    model = model_for(server, "429-date-then-ok", "openai-chat", token)
    options = Options(**{**_fields(FAST), "retry_max_delay": 2.0})
    started = time.monotonic()
    events = run(shell, collect, model, options)
    waited = time.monotonic() - started
    assert events == expected_events(server, "openai-chat")
    assert server.hits(token) == 2
    assert waited >= 0.95


def test_retry_after_beyond_retry_max_delay_is_the_callers_decision(
    shell: str, wire: str, server: FakeProvider, request: pytest.FixtureRequest
) -> None:
    token = _token(request)
    events = run(shell, collect, model_for(server, "429-date-far", wire, token))
    error = events[-1]
    assert isinstance(error, Error) and error.kind == ErrorKind.THROTTLED
    assert error.retry_after == 3600.0
    assert error.attempts == 1 == server.hits(token)
