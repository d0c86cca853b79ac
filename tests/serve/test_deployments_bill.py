"""The bill of a served name's deployments, counted at a fake upstream.

Each deployment is its own token at the loopback fake provider, so its hits
are that deployment's upstream requests. The pool's clock is a fake one the
test moves: cooldowns end when the test says, not when this CPU gets there.
"""

from __future__ import annotations

import http.client
import json
import time
from collections.abc import Iterator
from contextlib import AsyncExitStack

import pytest
from fake_provider import FakeProvider
from loopback_server import KEY, Server, provider_backend, wait_until

from streamfn.asgi import App, ServerConfig
from streamfn.asgi._backends import ProviderBackend, ServedModel
from streamfn.asgi._observe import Flight
from streamfn.core import Context, Model, Options, UserMessage
from streamfn.core.catalogue._models import openai_compatible
from streamfn.core.serve._deployments import Cooldown
from streamfn.core.stages._try_again import most_requests
from streamfn.ledger import MemoryStore

# every test here runs on both shells (tests/serve/conftest.py)
pytestmark = pytest.mark.usefixtures("shell")

USER = [{"role": "user", "content": "hi"}]
COOLDOWN = Cooldown(default=5.0, longest=120.0)


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(scope="module")
def upstream() -> Iterator[FakeProvider]:
    with FakeProvider() as fake:
        yield fake


_made = [0]


def _pool(
    upstream: FakeProvider, *faults: str, weights: tuple[float, ...] = (), attempts: int = 1
) -> tuple[ProviderBackend, FakeClock, list[str]]:
    """A backend serving "pool" by one deployment per fault, and each one's hit token."""
    _made[0] += 1
    tokens = [f"pool{_made[0]}-{i}" for i in range(len(faults))]
    served = [
        ServedModel(
            name="pool",
            model=openai_compatible("m", upstream.base_url(fault, "openai-chat", token)),
            defaults=Options(idle_timeout=2.0),
            weight=weights[i] if weights else 1.0,
        )
        for i, (fault, token) in enumerate(zip(faults, tokens, strict=True))
    ]
    clock = FakeClock()
    backend = provider_backend(
        served=served, registry=False, cooldown=COOLDOWN, clock=clock, upstream_attempts=attempts
    )
    return backend, clock, tokens


def _model() -> Model:
    return Model(id="m", provider="my-vllm", api="openai-chat", base_url="http://127.0.0.1:9")


ADMIN = "operator-key-for-tests"


def _serving(backend: ProviderBackend) -> Server:
    return Server(App(backend, ServerConfig(api_key=KEY, admin_key=ADMIN)))


def _hits(upstream: FakeProvider, tokens: list[str]) -> list[int]:
    return [upstream.hits(token) for token in tokens]


def _ask(server: Server, *, stream: bool = False, key: str = KEY) -> tuple[int, str, bytes]:
    """One chat completion: its status, Retry-After and body."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        headers = {"authorization": f"Bearer {key}", "content-type": "application/json"}
        body = {"model": "pool", "messages": USER, "stream": stream}
        conn.request("POST", "/v1/chat/completions", json.dumps(body), headers)
        response = conn.getresponse()
        return response.status, response.getheader("retry-after") or "", response.read()
    finally:
        conn.close()


def _health(server: Server, key: str | None = ADMIN) -> dict[str, object]:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        conn.request("GET", "/health", headers={"authorization": f"Bearer {key}"} if key else {})
        reply: dict[str, object] = json.loads(conn.getresponse().read())
        return reply
    finally:
        conn.close()


def _deployments(server: Server) -> list[dict[str, object]]:
    deployments = _health(server)["deployments"]
    assert isinstance(deployments, list)
    return deployments


def test_a_failure_before_output_costs_one_request_on_the_next_deployment(
    upstream: FakeProvider,
) -> None:
    backend, _, tokens = _pool(upstream, "500", "ok")
    with _serving(backend) as server:
        status, _, body = _ask(server)
    assert status == 200 and "Hello" in json.loads(body)["choices"][0]["message"]["content"]
    assert _hits(upstream, tokens) == [1, 1]


def test_each_request_is_recorded_with_the_deployment_that_answered(
    upstream: FakeProvider,
) -> None:
    seen: list[tuple[str | None, list[str]]] = []

    class Deployments:
        def opened(self, flight: Flight) -> None:
            pass

        def closed(self, flight: Flight) -> None:
            seen.append((flight.deployment, flight.tried))

    backend, _, _ = _pool(upstream, "500", "ok")
    with Server(App(backend, ServerConfig(api_key=KEY), observers=[Deployments()])) as server:
        assert _ask(server)[0] == 200  # the first failed, the second answered
        assert _ask(server, stream=True)[0] == 200  # the first rests
    assert seen == [("pool#2", ["pool"]), ("pool#2", [])]


def test_a_failed_attempt_stays_on_record_under_the_deployment_that_failed(
    upstream: FakeProvider,
) -> None:
    """The usage record names the deployment that answered, and keeps the ones that
    failed before it: a report by deployment shows the failed attempts where they were."""
    store = MemoryStore()
    _, secret = store.create_key("ci", now=time.time())
    backend, _, tokens = _pool(upstream, "500", "ok")
    with Server(App(backend, ServerConfig(), store=store)) as server:
        assert _ask(server, key=secret)[0] == 200
        wait_until(lambda: len(store.records(since=0, until=2e9)) == 1, 10)
    [record] = store.records(since=0, until=2e9)
    assert (record.deployment, record.attempts, record.tried) == ("pool#2", 2, ("pool",))
    assert _hits(upstream, tokens) == [1, 1]
    report = {row["deployment"]: row for row in store.report(["deployment"], since=0, until=2e9)}
    assert (report["pool"]["requests"], report["pool"]["failovers"]) == (0, 1)
    assert (report["pool#2"]["requests"], report["pool#2"]["failovers"]) == (1, 0)


def test_no_other_deployment_is_asked_once_output_began(upstream: FakeProvider) -> None:
    backend, _, tokens = _pool(upstream, "reset", "ok")
    with _serving(backend) as server:
        status, _, body = _ask(server, stream=True)
        # the cut answer stays cut, in the client's shape: its text, then an error event
        assert status == 200 and b"Hello" in body and b'"code":"network"' in body
        assert b'"finish_reason":"stop"' not in body
        assert _hits(upstream, tokens) == [1, 0]
        # and the deployment that cut it rests: the next request goes elsewhere
        assert _ask(server)[0] == 200
    assert _hits(upstream, tokens) == [1, 1]


def test_server_attempts_multiply_by_the_deployments_tried(upstream: FakeProvider) -> None:
    """The documented worst case before output: deployments x attempts."""
    backend, _, tokens = _pool(upstream, "429", "429", attempts=2)  # Retry-After: 0
    with _serving(backend) as server:
        assert _ask(server)[0] == 429
    assert _hits(upstream, tokens) == [2, 2]
    assert sum(_hits(upstream, tokens)) == most_requests(deployments=2, attempts=2)


def test_a_resting_deployment_gets_no_request_until_its_cooldown_ends(
    upstream: FakeProvider,
) -> None:
    backend, clock, tokens = _pool(upstream, "500-then-ok", "ok")
    with _serving(backend) as server:
        assert _ask(server)[0] == 200
        assert _hits(upstream, tokens) == [1, 1]  # the first failed, the second answered
        for _ in range(3):  # first choice by load, yet resting: not asked
            clock.now += 1.0
            assert _ask(server)[0] == 200
        assert _hits(upstream, tokens) == [1, 4]
        clock.now += COOLDOWN.default  # rested enough; and the least used now
        assert _ask(server)[0] == 200
    assert _hits(upstream, tokens) == [2, 4]


def test_all_deployments_resting_answer_429_with_the_soonest_end_and_ask_nobody(
    upstream: FakeProvider,
) -> None:
    backend, clock, tokens = _pool(upstream, "500", "500")
    with _serving(backend) as server:
        status, _, _ = _ask(server)
        assert status == 502 and _hits(upstream, tokens) == [1, 1]  # the last one's error
        clock.now += 2.0
        status, retry_after, body = _ask(server)
        assert status == 429 and retry_after == "3"  # 5 s rest, 2 s of it gone
        assert "cooling down" in json.loads(body)["error"]["message"]
        status, retry_after, _ = _ask(server, stream=True)
        assert status == 429 and retry_after == "3"
    assert _hits(upstream, tokens) == [1, 1]


def test_the_upstreams_retry_after_is_the_rest(upstream: FakeProvider) -> None:
    # Retry-After one second past the response's Date; then the deployment answers
    backend, clock, tokens = _pool(upstream, "429-date-then-ok", "ok")
    with _serving(backend) as server:
        assert _ask(server)[0] == 200
        rest = {d["deployment"]: d["cooling_for"] for d in _deployments(server)}
        assert rest == {"pool": 1.0, "pool#2": 0.0}
        clock.now += 0.5
        assert _ask(server)[0] == 200
        assert _hits(upstream, tokens) == [1, 2]
        clock.now += 0.5
        assert _ask(server)[0] == 200  # rested: the least used again
    assert _hits(upstream, tokens) == [2, 2]


@pytest.mark.parametrize(("weights", "spread"), [((1.0, 1.0), [2, 2]), ((3.0, 1.0), [3, 1])])
def test_concurrent_requests_go_to_the_least_busy(
    upstream: FakeProvider, weights: tuple[float, float], spread: list[int]
) -> None:
    backend, _, tokens = _pool(upstream, "ok", "ok", weights=weights)
    context = Context(messages=[UserMessage(content="hi")])
    in_flight: list[int] = []

    async def four_open_at_once() -> None:
        async with AsyncExitStack() as held:
            for _ in range(4):
                opened = backend.stream_batches("pool", context, Options())
                batches = await held.enter_async_context(opened)
                await batches.__anext__()  # its upstream answered: in flight until closed
            in_flight.extend(d.in_flight for d in backend.deployments())

    with _serving(backend) as server:
        server.call(four_open_at_once)
        assert in_flight == spread and _hits(upstream, tokens) == spread
        assert [d["in_flight"] for d in _deployments(server)] == [0, 0]


def test_health_shows_each_deployment_and_no_address_nor_key(upstream: FakeProvider) -> None:
    served = [
        ServedModel(
            name="pool",
            model=openai_compatible("m", upstream.base_url("500", "openai-chat", "health-a")),
            api_key_env="POOL_KEY_A",
            deployment="east",
        ),
        ServedModel(
            name="pool",
            model=openai_compatible("m", upstream.base_url("ok", "openai-chat", "health-b")),
            api_key_env="POOL_KEY_B",
            deployment="west",
            weight=2.0,
        ),
    ]
    environ = {"POOL_KEY_A": "sk-secret-a", "POOL_KEY_B": "sk-secret-b"}
    backend = provider_backend(environ, served=served, registry=False, cooldown=COOLDOWN)
    urls: list[str] = []

    async def addresses() -> None:  # on the serving loop, whose clock times the rests
        urls.extend(d.base_url for d in backend.deployments())

    with _serving(backend) as server:
        assert _ask(server)[0] == 200
        health = _health(server)
        anyone, client = _health(server, None), _health(server, KEY)
        server.call(addresses)
    # a load balancer's probe (or a client) learns the load and how many rest, no names
    assert anyone == client == {
        "status": "ok",
        "active_streams": 0,
        "admitted": 0,
        "deployments_resting": 1,
    }
    text = json.dumps(health)
    for secret in ("sk-secret", "POOL_KEY", str(upstream.port)):
        assert secret not in text, text
    deployments = health["deployments"]
    assert isinstance(deployments, list)
    east, west = deployments
    assert east["deployment"] == "east" and east["name"] == "pool"
    assert east["failures"] == 1 and east["last_error"] == "network"
    assert 0 < east["cooling_for"] <= COOLDOWN.default
    assert west["requests"] == 1 and west["failures"] == 0 and west["weight"] == 2.0
    # the backend's own records, for metrics and the admin page, have the address
    assert urls[0].endswith("/500/openai-chat/health-a")


def test_the_app_times_rests_on_its_event_loops_clock() -> None:
    from streamfn.io_asyncio._server import AsyncioRuntime

    class Stopped(AsyncioRuntime):
        def clock(self) -> float:
            return 42.0

    backend = provider_backend(served=[ServedModel(name="pool", model=_model())], registry=False)
    App(backend, ServerConfig(), runtime=Stopped())
    assert backend.clock() == 42.0
