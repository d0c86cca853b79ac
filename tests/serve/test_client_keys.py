"""Client keys in the gateway: every request on its own key, refused before any upstream
request when the key may not go, and its use on record.

A real server (both shells) in front of the loopback fake provider, whose request
count proves that a refused request never left the gateway; the official openai
and anthropic SDKs see each refusal as their own exception. The store is the
ledger's in-memory reference (the SQLite and PostgreSQL stores are proved with
the real command line in test_client_keys_cli.py).
"""

from __future__ import annotations

import hashlib
import http.client
import json
import logging
import secrets
import threading
import time
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx
import msgspec
import openai
import pytest
from fake_provider import FakeProvider
from loopback_server import Server, provider_backend, wait_until

from streamfn.asgi import App, ServedModel, ServerConfig, _usage_recorder
from streamfn.asgi._keys import KEY_CACHE_SECONDS
from streamfn.asgi._observe import Flight
from streamfn.core import Model
from streamfn.fuzz._fake_bodies import openai_body
from streamfn.ledger import ClientKey, MemoryStore, UsageRecord

pytestmark = pytest.mark.usefixtures("shell")

USER = [{"role": "user", "content": "hi"}]
#: the deltas of the long answer (each "abcd": one token, estimated, $0.002)
LONG = 2000
DELTA_COST = 1 * 2000.0 / 1e6
#: US dollars per million tokens: the fake's answer (5 in, 8 out) costs $0.021
PRICE_IN, PRICE_OUT = 1000.0, 2000.0
ANSWER_COST = (5 * PRICE_IN + 8 * PRICE_OUT) / 1e6


class Gateway:
    """A gateway with client keys, its store, and the fake upstream it calls."""

    def __init__(
        self, server: Server, store: MemoryStore, upstream: FakeProvider, token: str, long: str
    ):
        self.server, self.store, self.upstream, self.token = server, store, upstream, token
        #: the name of the long answer's body, which the fake sends paced and counts
        self.long = long

    def key(self, **limits: object) -> tuple[ClientKey, str]:
        return self.store.create_key(
            f"k{secrets.token_hex(3)}",
            now=time.time(),
            **limits,  # type: ignore[arg-type]
        )

    def openai(self, secret: str) -> openai.OpenAI:
        url = self.server.url + "/v1"
        return openai.OpenAI(base_url=url, api_key=secret, max_retries=0, timeout=10)

    def hits(self) -> int:
        return self.upstream.hits(self.token)

    def spend(self, key: ClientKey, cost: float) -> None:
        """``cost`` on record for ``key``, as if earlier requests had spent it."""
        record = UsageRecord(
            at=time.time(), key_id=key.id, route="/v1/chat/completions", model="priced", cost=cost
        )
        self.store.settle(None, record)

    def records(self, key: ClientKey) -> list[UsageRecord]:
        return self.store.records(since=0, until=time.time() + 60, key_id=key.id)


@pytest.fixture(scope="module")
def gateway(shell: str, fake_upstream: FakeProvider) -> Iterator[Gateway]:
    token = f"keys-{shell}"
    model = Model(
        id="fake",
        provider="openai",
        api="openai-chat",
        base_url=fake_upstream.base_url("ok", "openai-chat", token),
        price_input=PRICE_IN,
        price_output=PRICE_OUT,
        max_output=64,
    )
    unpriced = Model(
        id="fake", provider="openai", api="openai-chat", base_url=model.base_url, max_output=64
    )
    long_url = fake_upstream.serve(openai_body(["abcd"] * LONG), fault="paced")
    long = msgspec.structs.replace(model, base_url=long_url)
    served = [
        ServedModel(name="priced", model=model, api_key_env="GK_UPSTREAM"),
        ServedModel(name="unpriced", model=unpriced, api_key_env="GK_UPSTREAM"),
        ServedModel(name="long", model=long, api_key_env="GK_UPSTREAM"),
        ServedModel(name="pool", model=model, api_key_env="GK_UPSTREAM", deployment="cheap"),
        ServedModel(
            name="pool",
            model=msgspec.structs.replace(model, price_input=3 * PRICE_IN),
            api_key_env="GK_UPSTREAM",
            deployment="dear",
        ),
    ]
    backend = provider_backend({"GK_UPSTREAM": "sk-upstream"}, served=served, registry=False)
    store = MemoryStore()
    app = App(backend, ServerConfig(), store=store)
    with Server(app) as server:
        yield Gateway(server, store, fake_upstream, token, long_url.rsplit("/", 1)[1])


def _ask(client: openai.OpenAI, model: str = "priced") -> str:
    stream = client.chat.completions.create(
        model=model,
        messages=USER,
        stream=True,
        max_tokens=16,  # type: ignore[arg-type]
    )
    return "".join(c.choices[0].delta.content or "" for c in stream if c.choices)


def test_a_key_in_order_is_served_and_its_use_recorded(gateway: Gateway) -> None:
    key, secret = gateway.key(budget=1.0)
    before = gateway.hits()
    with gateway.openai(secret) as client:
        assert _ask(client)
    assert gateway.hits() == before + 1
    wait_until(lambda: len(gateway.records(key)) == 1, 10)
    [record] = gateway.records(key)
    assert record.outcome == "ok" and record.route == "/v1/chat/completions"
    assert record.model == "priced" and record.key_id == key.id
    assert (record.input_tokens, record.output_tokens) == (5, 8)
    assert record.cost == pytest.approx(ANSWER_COST)
    assert record.first_token is not None and 0 <= record.first_token <= record.latency
    assert gateway.store.spent(key.id, now=time.time()) == pytest.approx(ANSWER_COST)


def test_refusals_are_the_clients_own_errors_and_never_reach_the_upstream(
    gateway: Gateway,
) -> None:
    spent, spent_secret = gateway.key(budget=ANSWER_COST)
    gateway.spend(spent, ANSWER_COST)
    _, limited_secret = gateway.key(rpm=1)
    _, narrow_secret = gateway.key(models=["unpriced"])
    revoked, revoked_secret = gateway.key()
    gateway.store.revoke_key(revoked.id, now=time.time())
    before = gateway.hits()
    with gateway.openai("sfn-" + "x" * 43) as client, pytest.raises(openai.AuthenticationError):
        _ask(client)
    spent_budget = "budget for the month is spent"
    with (
        gateway.openai(spent_secret) as client,
        pytest.raises(openai.PermissionDeniedError, match=spent_budget),
    ):
        _ask(client)
    with gateway.openai(limited_secret) as client:
        assert _ask(client)
        before = gateway.hits()
        with pytest.raises(openai.RateLimitError, match="1 requests per minute") as limit:
            _ask(client)
    assert 1 <= int(limit.value.response.headers["retry-after"]) <= 60
    with (
        gateway.openai(narrow_secret) as client,
        pytest.raises(
            openai.PermissionDeniedError,
            match="may not use the model 'priced': GET /v1/models lists the ones it may",
        ),
    ):
        _ask(client)
    with (
        gateway.openai(revoked_secret) as client,
        pytest.raises(openai.AuthenticationError, match="ask the gateway's operator for a new"),
    ):
        _ask(client)
    url = gateway.server.url
    with (
        anthropic.Anthropic(base_url=url, api_key=spent_secret, max_retries=0) as client,
        pytest.raises(anthropic.PermissionDeniedError) as denied,
    ):
        client.messages.create(model="priced", max_tokens=16, messages=USER)  # type: ignore[arg-type]
    assert denied.value.body["error"]["type"] == "permission_error"  # type: ignore[index]
    assert gateway.hits() == before  # not one of them went upstream
    wait_until(lambda: len(gateway.records(spent)) == 3, 10)
    outcomes = sorted(r.outcome for r in gateway.records(spent))
    assert outcomes == ["ok", *["refused:this key's budget for the month is spent: it renews on the 1st, 00:00 UTC"] * 2]
    assert sorted(r.cost or 0.0 for r in gateway.records(spent)) == [0.0, 0.0, ANSWER_COST]


def test_a_budget_cannot_be_kept_on_a_model_without_prices(gateway: Gateway) -> None:
    _, secret = gateway.key(budget=5.0)
    before = gateway.hits()
    with gateway.openai(secret) as client, pytest.raises(openai.PermissionDeniedError) as refused:
        _ask(client, "unpriced")
    assert "no known prices" in str(refused.value) and gateway.hits() == before
    free, free_secret = gateway.key()  # no budget: served, its cost unknown (None)
    with gateway.openai(free_secret) as client:
        assert _ask(client, "unpriced")
    wait_until(lambda: len(gateway.records(free)) == 1, 10)
    assert gateway.records(free)[0].cost is None


def _post(url: str, path: str, secret: str, body: dict[str, object]) -> tuple[int, bytes]:
    host = url.removeprefix("http://")
    conn = http.client.HTTPConnection(host, timeout=10)
    headers = {"content-type": "application/json", "x-api-key": secret}
    conn.request("POST", path, json.dumps(body).encode(), headers)
    answer = conn.getresponse()
    status, data = answer.status, answer.read()
    conn.close()
    return status, data


def test_token_counts_need_a_usable_key_count_against_rpm_and_spend_nothing(
    gateway: Gateway,
) -> None:
    """A count may ask the upstream's counting endpoint (on the operator's account,
    in one of the server's slots): a key's requests per minute hold it too."""
    key, secret = gateway.key(rpm=2, budget=1.0, models=["priced"])
    body = {"model": "priced", "messages": USER}
    status, _ = _post(gateway.server.url, "/v1/messages/count_tokens", "sfn-nobody", body)
    assert status == 401
    other = {"model": "unpriced", "messages": USER}
    status, _ = _post(gateway.server.url, "/v1/messages/count_tokens", secret, other)
    assert status == 403
    for _ in range(2):
        status, _ = _post(gateway.server.url, "/v1/messages/count_tokens", secret, body)
        assert status == 200
    status, _ = _post(gateway.server.url, "/v1/messages/count_tokens", secret, body)
    assert status == 429  # unlimited counts: unlimited upstream calls on one key
    with gateway.openai(secret) as client, pytest.raises(openai.RateLimitError):
        _ask(client)  # the minute's two requests were the counts
    assert gateway.store.spent(key.id, now=time.time()) == 0.0


def test_a_flood_of_keys_nobody_has_costs_the_store_little(
    gateway: Gateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each lookup takes a thread and a query: text not shaped like a secret (a
    provider's key sent by mistake) asks the store nothing, and a stale secret
    retried (a rotated key in a script's loop) asks it once a second."""
    asked: list[str] = []
    find = gateway.store.key_for_secret
    monkeypatch.setattr(
        gateway.store, "key_for_secret", lambda secret: asked.append(secret) or find(secret)
    )
    body = {"model": "priced", "messages": USER}
    stale = "sfn-" + secrets.token_urlsafe(32)
    for secret in ("sk-proj-" + "x" * 40, "sfn-" + "x" * 42 + "!", "sfn-short"):
        for _ in range(3):
            assert _post(gateway.server.url, "/v1/chat/completions", secret, body)[0] == 401
    assert asked == []
    for _ in range(10):
        assert _post(gateway.server.url, "/v1/chat/completions", stale, body)[0] == 401
    assert 1 <= len(asked) < 10  # once a second: ten requests take far less than nine
    _, secret = gateway.key()
    with gateway.openai(secret) as client:
        assert _ask(client)  # a real key is found as before


def test_the_model_list_shows_a_key_its_own_models(gateway: Gateway) -> None:
    _, secret = gateway.key(models=["unpriced"])
    with gateway.openai(secret) as client:
        assert [m.id for m in client.models.list()] == ["unpriced"]
    with gateway.openai("sfn-nobody") as client, pytest.raises(openai.AuthenticationError):
        client.models.list()


def test_a_revoked_key_is_refused_at_once_and_everywhere_within_a_second(
    gateway: Gateway,
) -> None:
    key, secret = gateway.key()
    with gateway.openai(secret) as client:
        assert [m.id for m in client.models.list()]  # the key is remembered now
        gateway.store.revoke_key(key.id, now=time.time())
        with pytest.raises(openai.AuthenticationError, match="revoked"):
            _ask(client)  # admission reads the key afresh
        time.sleep(KEY_CACHE_SECONDS)
        with pytest.raises(openai.AuthenticationError, match="revoked"):
            client.models.list()


def _turn(conn: object) -> list[object]:
    events = []
    for event in conn:  # type: ignore[attr-defined]
        events.append(event)
        if event.type in ("response.completed", "response.failed", "error"):
            return events
    raise AssertionError("the socket closed inside a turn")


def test_a_sockets_turns_are_admitted_each_on_the_handshakes_key(gateway: Gateway) -> None:
    key, secret = gateway.key(budget=1.0)
    before = gateway.hits()
    with gateway.openai(secret) as client, client.responses.connect() as conn:
        conn.response.create(model="priced", input="Hi", max_output_tokens=16)
        assert _turn(conn)[-1].type == "response.completed"  # type: ignore[attr-defined]
        wait_until(lambda: len(gateway.records(key)) == 1, 10)
        gateway.spend(key, 1.0)  # the rest of the budget, spent elsewhere
        conn.response.create(model="priced", input="Hi", max_output_tokens=16)
        [error] = _turn(conn)
        assert error.type == "error" and error.status == 403  # type: ignore[attr-defined]
        assert "budget" in error.message  # type: ignore[attr-defined]
    assert gateway.hits() == before + 1
    with (
        gateway.openai("sfn-nobody") as client,
        pytest.raises(Exception, match="401"),
        client.responses.connect() as conn,
    ):
        conn.response.create(model="priced", input="Hi")
        _turn(conn)
    assert gateway.hits() == before + 1


def test_no_key_in_any_log_record_or_answer(
    gateway: Gateway, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    key, secret = gateway.key(budget=1.0, rpm=2, models=["priced"])
    revoked, revoked_secret = gateway.key()
    gateway.store.revoke_key(revoked.id, now=time.time())
    unknown = "sfn-" + secrets.token_urlsafe(32)
    seen: list[bytes] = []
    url = gateway.server.url
    body = {"model": "priced", "messages": USER, "max_tokens": 16, "stream": True}
    other = {**body, "model": "unpriced"}  # a model the key may not use
    for each in (secret, secret, revoked_secret, unknown):  # ok, then rpm; 401 twice
        for path in ("/v1/chat/completions", "/v1/messages", "/v1/messages/count_tokens"):
            for asked in (body, other):
                status, answer = _post(url, path, each, asked)
                seen.append(b"%d %s" % (status, answer))
    with gateway.openai(unknown) as client, pytest.raises(openai.AuthenticationError) as refused:
        client.models.list()
    seen.append(refused.value.response.content + str(refused.value.response.headers).encode())
    wait_until(lambda: len(gateway.records(key)) >= 6, 10)
    statuses = {int(line.split(b" ", 1)[0]) for line in seen[:-1]}
    assert {200, 401, 403, 429} <= statuses  # each way in and out was taken
    said = "\n".join(r.getMessage() for r in caplog.records).encode() + b"\n".join(seen)
    records = repr(gateway.store.records(since=0, until=time.time() + 60)).encode()
    for leaked in (secret, revoked_secret, unknown):
        hashed = hashlib.sha256(leaked.encode()).hexdigest()
        for text in (said, records):
            assert leaked.encode() not in text and hashed.encode() not in text
            assert leaked[4:20].encode() not in text  # nor a piece of it


def _cut_long(
    gateway: Gateway, secret: str, **extra: Any
) -> tuple[list[str], openai.APIError, tuple[int, bool]]:
    """The long answer streamed on ``secret`` until the gateway cuts it: the text seen,
    the client's error, and what the fake sent (its events, whether the gateway hung up)."""
    gateway.upstream.paced.pop(gateway.long, None)
    seen: list[str] = []
    with gateway.openai(secret) as client, pytest.raises(openai.APIError) as cut:
        for chunk in client.chat.completions.create(
            model="long", messages=USER, stream=True, **extra
        ):
            seen += [chunk.choices[0].delta.content or ""] if chunk.choices else []
    deadline = time.monotonic() + 10  # a hang guard: the fake notices at its next send
    while gateway.long not in gateway.upstream.paced and time.monotonic() < deadline:
        time.sleep(0.005)
    return seen, cut.value, gateway.upstream.paced[gateway.long]


def test_a_stream_that_crosses_its_budget_ends_with_an_error_and_its_upstream_cancelled(
    gateway: Gateway,
) -> None:
    """$0.015 left: the input ($0.005) and five deltas ($0.002 each) fit, the sixth
    crosses it and is the last one the client sees; the fake, sending one delta every
    few milliseconds, finds the connection closed long before its 2000 are out."""
    key, secret = gateway.key(budget=1.0)
    gateway.spend(key, 1.0 - 0.015)
    flights: list[Flight] = []
    watch = Watch(flights)
    gateway.server.app.flights.observers.append(watch)
    try:
        seen, cut, (sent, left) = _cut_long(gateway, secret, max_tokens=32)
    finally:
        gateway.server.app.flights.observers.remove(watch)
    [flight] = flights
    # one count of the output: the cap's meter's, which the record reads too
    assert flight.spend is not None and flight.spend.streamed == 6
    assert flight.output_chars == 0 and flight.counted == 6
    assert "".join(seen) == "abcd" * 6
    assert str(cut).startswith("cut: this answer reached what this server lets")
    assert "max_cost" not in str(cut)  # the server's cap, not the client's option
    assert left and sent < LONG
    wait_until(lambda: len(gateway.records(key)) == 2, 10)
    [record] = [r for r in gateway.records(key) if r.model == "long"]
    assert record.outcome == "cut" and record.output_tokens == 6
    assert 0.015 < record.cost <= 0.015 + DELTA_COST  # overspent by one delta at most
    with gateway.openai(secret) as client, pytest.raises(openai.PermissionDeniedError):
        _ask(client, "long")  # the budget is spent now: refused before any request


def test_a_stream_ends_before_its_reservation_leaves_the_budget(
    gateway: Gateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The store lets a reservation nobody settled go after its ``lease_ttl`` (its
    worker died): a stream still running then would spend outside the budget while
    a second request is admitted against the money it holds. So the stream is cut
    first. Here a reservation of 50 ms: its cap ($0.133, the model's 64 output tokens)
    would cut the answer at its 64th delta, which the fake sends no sooner than 128 ms
    in (`PACE` apart), so the reservation's time runs out first, whatever the load."""
    monkeypatch.setattr(gateway.store, "lease_ttl", 0.05)
    key, secret = gateway.key(budget=100.0)
    seen, cut, (sent, left) = _cut_long(gateway, secret)
    assert str(cut).startswith("cut: this answer ran for as long as its reservation")
    assert len(seen) < LONG
    assert left and sent < LONG
    wait_until(lambda: len(gateway.records(key)) == 1, 10)
    [record] = gateway.records(key)
    assert record.outcome in ("cut", "error:budget")  # settled: the reservation let go


@pytest.mark.parametrize(("longest", "lease"), [(3600.0, 4000.0), (60.0, 900.0)])
def test_a_reservation_outlasts_the_servers_longest_stream(longest: float, lease: float) -> None:
    """A stream under a budget is cut at 90% of its reservation's lease; the gateway
    lengthens a shorter lease so that bound never comes before --max-stream-seconds
    (an hour by default against the stores' 15 minutes), and never shortens one."""
    store = MemoryStore()
    assert store.lease_ttl == 900.0
    App(provider_backend({}), ServerConfig(max_stream_seconds=longest), store=store)
    assert store.lease_ttl == pytest.approx(lease)


def test_a_name_with_deployments_is_budgeted_at_its_dearest_and_recorded_per_deployment(
    gateway: Gateway,
) -> None:
    backend = gateway.server.app.backend
    assert backend.billing_model("pool").price_input == 3 * PRICE_IN  # type: ignore[attr-defined]
    key, secret = gateway.key(budget=1.0)
    with gateway.openai(secret) as client:
        assert _ask(client, "pool")
    wait_until(lambda: len(gateway.records(key)) == 1, 10)
    [record] = gateway.records(key)
    assert record.deployment in ("cheap", "dear") and record.outcome == "ok"
    prices = {"cheap": PRICE_IN, "dear": 3 * PRICE_IN}  # what the one that answered bills
    assert record.cost == pytest.approx((5 * prices[record.deployment] + 8 * PRICE_OUT) / 1e6)


class DownStore(MemoryStore):
    """Keys are found, but admission fails, as a database that went away does."""

    def admit(self, key: ClientKey, model: str, *, now: float, estimate: float | None) -> Any:
        raise OSError("database is gone")


def test_a_store_that_cannot_admit_is_a_503_and_nothing_goes_upstream(
    gateway: Gateway,
) -> None:
    store = DownStore()
    _, secret = store.create_key("k", now=time.time())
    app = App(gateway.server.app.backend, ServerConfig(), store=store)
    before = gateway.hits()
    with Server(app) as server:
        client = openai.OpenAI(base_url=server.url + "/v1", api_key=secret, max_retries=0)
        with client, pytest.raises(openai.InternalServerError) as down:
            _ask(client)
    assert down.value.status_code == 503 and "retry-after" in down.value.response.headers
    assert gateway.hits() == before


def test_the_operators_routes_stay_the_operators_with_client_keys(gateway: Gateway) -> None:
    """With client keys, no client needs the shared key, yet the server is not an open
    one: /metrics is off without an admin key (a client key never opens it), and the
    dashboard's playground, behind the admin key, runs unlimited as the admin's use."""
    _, secret = gateway.key()
    for headers in ({"authorization": f"Bearer {secret}"}, {}):
        assert httpx.get(gateway.server.url + "/metrics", headers=headers).status_code == 404
    store = MemoryStore()
    app = App(gateway.server.app.backend, ServerConfig(admin_key="adm-key"), store=store)
    body = {"model": "priced", "context": {"messages": [{"type": "user", "content": "hi"}]}}
    with Server(app) as server:
        answer = httpx.post(
            server.url + "/admin/api/playground",
            headers={"authorization": "Bearer adm-key"},
            json=body,
            timeout=30,
        )
        assert answer.status_code == 200 and "event: done" in answer.text
        assert (
            httpx.get(
                server.url + "/metrics", headers={"authorization": f"Bearer {secret}"}
            ).status_code
            == 403
        )
        wait_until(lambda: len(store.records(since=0, until=time.time() + 60)) == 1, 10)
    [record] = store.records(since=0, until=time.time() + 60)
    assert (record.key_id, record.outcome) == ("admin", "ok")


def test_a_rotated_keys_old_secret_is_refused_within_a_second(gateway: Gateway) -> None:
    key, old = gateway.key()
    with gateway.openai(old) as client:
        assert _ask(client)
    new = gateway.store.rotate_key(key.id, now=time.time())
    time.sleep(KEY_CACHE_SECONDS)
    with gateway.openai(old) as client, pytest.raises(openai.AuthenticationError):
        _ask(client)
    with gateway.openai(new) as client:
        assert _ask(client)


class Watch:
    """An observer keeping each flight as it closes."""

    def __init__(self, flights: list[Flight]) -> None:
        self.flights = flights

    def opened(self, flight: Flight) -> None:
        pass

    def closed(self, flight: Flight) -> None:
        self.flights.append(flight)


class GatedStore(MemoryStore):
    """Keeps records only when let (``gate``), counting each admission it is asked."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.admissions = 0

    def admit(self, key: ClientKey, model: str, *, now: float, estimate: float | None) -> Any:
        self.admissions += 1
        return super().admit(key, model, now=now, estimate=estimate)

    def settle_many(self, settled: Any) -> None:
        self.gate.wait(30)
        super().settle_many(settled)


def test_one_key_hammering_past_its_rpm_fails_no_other_keys_request(
    gateway: Gateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A key refused for its requests per minute is answered from memory until its
    Retry-After: no store query, no usage record queued. So its retries, however
    fast, never fill the recorder's queue (a store that keeps nothing for now, with
    room for eight records) and another key is served and recorded as ever."""
    monkeypatch.setattr(_usage_recorder, "MAX_WAITING_RECORDS", 8)
    store = GatedStore()
    hammer, hammer_secret = store.create_key("hammer", now=time.time(), rpm=1)
    other, other_secret = store.create_key("other", now=time.time())
    app = App(gateway.server.app.backend, ServerConfig(), store=store)
    body = {"model": "priced", "messages": USER, "max_tokens": 16}
    path = "/v1/chat/completions"
    try:
        with Server(app) as server:
            assert _post(server.url, path, hammer_secret, body)[0] == 200
            statuses = [_post(server.url, path, hammer_secret, body)[0] for _ in range(40)]
            assert statuses == [429] * 40
            assert store.admissions == 2  # the first admission and the first refusal
            assert _post(server.url, path, other_secret, body)[0] == 200
            store.gate.set()
            wait_until(lambda: len(store.records(since=0, until=time.time() + 60)) == 3, 10)
    finally:
        store.gate.set()
    assert [r.outcome for r in store.records(since=0, until=time.time() + 60, key_id=other.id)] == [
        "ok"
    ]
    outcomes = sorted(r.outcome for r in store.records(since=0, until=2e9, key_id=hammer.id))
    assert outcomes == ["ok", "refused:this key's limit of 1 requests per minute is reached"]
    assert app.keys is not None and app.keys.recorder.refusals_repeated == 39


def test_a_stream_without_a_budget_ends_at_the_servers_longest_stream(gateway: Gateway) -> None:
    """An upstream that keeps sending (here a delta every few milliseconds for seconds
    on end; one just inside its idle timeout, again and again, is the same) never
    trips the idle timer: the server's bound on a stream ends it, in the client's
    dialect, naming the bound and how to raise it, its upstream call closed."""
    store = MemoryStore()
    key, secret = store.create_key("free", now=time.time())  # no budget: no reservation
    app = App(gateway.server.app.backend, ServerConfig(max_stream_seconds=1.0), store=store)
    gateway.upstream.paced.pop(gateway.long, None)
    seen: list[str] = []
    with Server(app) as server:
        client = openai.OpenAI(base_url=server.url + "/v1", api_key=secret, max_retries=0)
        with client, pytest.raises(openai.APIError) as cut:
            for chunk in client.chat.completions.create(model="long", messages=USER, stream=True):
                seen += [chunk.choices[0].delta.content or ""] if chunk.choices else []
        wait_until(lambda: gateway.long in gateway.upstream.paced, 10)
        wait_until(lambda: len(store.records(since=0, until=2e9)) == 1, 10)
    said = str(cut.value)
    assert said.startswith("cut: this answer ran for as long as this server lets a stream run")
    assert "(1 s)" in said and "--max-stream-seconds" in said
    sent, left = gateway.upstream.paced[gateway.long]
    assert left and sent < LONG and 0 < len(seen) < LONG  # 2000 deltas take 4 s at least
    [record] = store.records(since=0, until=2e9, key_id=key.id)
    assert record.outcome == "cut"


def test_a_keys_remembered_429_holds_whichever_model_a_retry_names(gateway: Gateway) -> None:
    """Requests per minute are the key's across its models, so is its remembered 429:
    a client cycling through the served names (a catalogue serves thousands) is
    answered from memory, asking the store nothing and queueing no record; a model
    the key may not use is still asked, and refused as such (403)."""
    store = GatedStore()
    store.gate.set()
    key, secret = store.create_key(
        "cycling", now=time.time(), rpm=1, models=("priced", "unpriced", "long")
    )
    app = App(gateway.server.app.backend, ServerConfig(), store=store)
    path = "/v1/chat/completions"

    def ask(model: str) -> int:
        body = {"model": model, "messages": USER, "max_tokens": 16}
        return _post(server.url, path, secret, body)[0]

    with Server(app) as server:
        assert [ask("priced"), ask("priced")] == [200, 429]
        assert store.admissions == 2  # the first admission and the first refusal
        assert [ask(name) for name in ("unpriced", "long", "unpriced", "priced")] == [429] * 4
        assert store.admissions == 2
        assert ask("pool") == 403 and store.admissions == 3  # not among the key's models
    assert app.keys is not None and app.keys.recorder.refusals_repeated == 4
    outcomes = sorted(r.outcome for r in store.records(since=0, until=2e9, key_id=key.id))
    assert outcomes == [
        "ok",
        "refused:this key may not use the model 'pool': GET /v1/models lists the ones it may",
        "refused:this key's limit of 1 requests per minute is reached",
    ]
