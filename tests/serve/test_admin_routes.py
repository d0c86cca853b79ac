"""The dashboard's JSON routes on both shells: only the admin key opens them (a client
key or the server's client token is a 403, no key a 401), no CORS and no other site's
page; streams in flight, usage by key and model over time, deployments, recent errors
and the playground, which runs through the App's own pipeline as the admin's use."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

import httpx
import pytest
from admin_support import ADMIN, GATED, HOUR, XSS_MODEL, dashboard, gated_stream, seeded_store
from loopback_server import HANG_GUARD, KEY, STREAMS, USER, Server, serving, wait_until

from streamfn.asgi import App, ServerConfig
from streamfn.asgi._observe import Flight
from streamfn.core import Error
from streamfn.fuzz._events_backend import EventsBackend
from streamfn.ledger import MemoryStore, UsageRecord

pytestmark = pytest.mark.usefixtures("shell")

ROUTES = [
    "/admin/api/flights",
    "/admin/api/usage",
    "/admin/api/deployments",
    "/admin/api/errors",
    "/admin/api/models",
]


@pytest.fixture(scope="module")
def served(shell: str) -> Iterator[tuple[Server, MemoryStore]]:
    store = seeded_store(time.time())
    with dashboard(store) as (server, _):
        yield server, store


def _get(server: Server, path: str, key: str | None = ADMIN, **headers: str) -> httpx.Response:
    if key is not None:
        headers["authorization"] = f"Bearer {key}"
    return httpx.get(server.url + path, headers=headers, timeout=HANG_GUARD)


@pytest.mark.parametrize("path", ROUTES)
def test_only_the_admin_key_opens_the_routes(served: tuple[Server, MemoryStore], path: str) -> None:
    server, store = served
    _, client_secret = store.create_key("carol", now=time.time())
    assert _get(server, path).status_code == 200
    assert _get(server, path, key=None).status_code == 401
    for refused in (KEY, client_secret, "not-a-key"):
        answer = _get(server, path, key=refused)
        assert answer.status_code == 403, answer.text
        assert refused not in answer.text and ADMIN not in answer.text
    answer = httpx.post(
        server.url + "/admin/api/playground",
        headers={"authorization": f"Bearer {KEY}", "content-type": "application/json"},
        json={"model": "demo-text", "context": {"messages": [{"type": "user", "content": "x"}]}},
    )
    assert answer.status_code == 403


def test_no_cors_and_no_other_sites_page(served: tuple[Server, MemoryStore]) -> None:
    server, _ = served
    evil = _get(server, "/admin/api/flights", origin="https://evil.example")
    assert evil.status_code == 403
    own = _get(server, "/admin/api/flights", origin=f"http://127.0.0.1:{server.port}")
    assert own.status_code == 200
    for answer in (evil, own):
        assert not any(h.startswith("access-control-") for h in answer.headers)
        assert answer.headers["cache-control"] == "no-store"
        assert "default-src 'self'" in answer.headers["content-security-policy"]
    assert _get(server, "/admin/api/flights", host="attacker.example").status_code == 400


def test_the_page_and_its_files_carry_the_policy(served: tuple[Server, MemoryStore]) -> None:
    server, _ = served
    for path, kind in [
        ("/admin", "text/html"),
        ("/admin/admin.js", "text/javascript"),
        ("/admin/admin.css", "text/css"),
    ]:
        answer = _get(server, path, key=None)  # the page holds no data: no key needed
        assert answer.status_code == 200 and answer.headers["content-type"].startswith(kind)
        policy = answer.headers["content-security-policy"]
        assert "script-src 'self';" in policy and "unsafe" not in policy
        assert "frame-ancestors 'none'" in policy
        assert answer.headers["x-frame-options"] == "DENY"
        assert answer.headers["cache-control"] == "no-store"
    assert '<script src="/admin/admin.js"' in _get(server, "/admin").text
    assert _get(server, "/admin/nothing").status_code == 404
    assert httpx.post(server.url + "/admin/api/flights").status_code == 405


def test_without_an_admin_key_there_are_no_admin_routes() -> None:
    with serving() as (server, _):
        answer = httpx.get(server.url + "/admin", headers={"authorization": f"Bearer {KEY}"})
        assert answer.status_code == 404
        assert server.app.admin is None
        # the operator who opens it learns why, and how to turn it on
        assert "STREAMFN_ADMIN_KEY" in answer.json()["error"]["message"]
        other = httpx.get(server.url + "/nothing", headers={"authorization": f"Bearer {KEY}"})
        assert "ADMIN" not in other.json()["error"]["message"]
    with pytest.raises(ValueError, match="admin_key must differ"):
        ServerConfig(api_key="same", admin_key="same")


def test_usage_per_key_and_model_by_the_hour_and_the_day(
    served: tuple[Server, MemoryStore],
) -> None:
    server, _ = served
    since = int(time.time() - 3 * HOUR)
    hourly = _get(server, f"/admin/api/usage?since={since}&bucket=hour").json()
    assert hourly["store"] and not hourly["partial"] and len(hourly["labels"]) in (3, 4)
    keys = {s["label"]: s for s in hourly["by_key"]}
    assert set(keys) == {"alice", "bob"}  # bob's record of 30 hours ago is outside
    assert sorted(c for c in keys["alice"]["cost"] if c) == [0.25, 0.5]
    assert sum(keys["alice"]["tokens"]) == 140 and sum(keys["bob"]["cost"]) == 1.0
    assert keys["alice"]["cost"].index(0.5) < keys["alice"]["cost"].index(0.25)
    models = {s["label"]: s for s in hourly["by_model"]}
    assert sum(models["demo-tool"]["tokens"]) == 300 and sum(models["demo-text"]["cost"]) == 0.75
    daily = _get(server, f"/admin/api/usage?since={int(time.time() - 3 * 86400)}&bucket=day")
    days = {s["label"]: s for s in daily.json()["by_key"]}
    assert sum(days["bob"]["cost"]) == 10.0 and sum(days["alice"]["tokens"]) == 140
    # how much of the spend is the gateway's estimate, by the hour and by the day
    assert hourly["estimated_cost"] == daily.json()["estimated_cost"] == 0.25
    assert sum(keys["alice"]["estimated"]) == 0.25 and sum(keys["bob"]["estimated"]) == 0
    for bad in (
        "since=nope",
        f"since={time.time() + 60:.0f}",
        "since=0&bucket=hour",
        "bucket=week",
    ):
        assert _get(server, "/admin/api/usage?" + bad).status_code == 400, bad


def test_without_a_store_the_usage_route_says_so() -> None:
    with dashboard(store=None) as (server, _):
        usage = _get(server, "/admin/api/usage").json()
        assert usage["store"] is False and "no usage record" in usage["message"]


def test_a_live_stream_is_in_flight_until_it_ends() -> None:
    with dashboard() as (server, backend):
        done = gated_stream(server)
        wait_until(
            lambda: any(
                f["deltas"] >= 3 for f in _get(server, "/admin/api/flights").json()["flights"]
            ),
            HANG_GUARD,
        )
        answer = _get(server, "/admin/api/flights").json()
        assert answer["whole"] is True and answer["not_shown"] == 0 and answer["workers"] == 1
        (flight,) = answer["flights"]
        assert flight["worker"] == os.getpid()  # the test's own process serves
        assert flight["model"] == GATED and flight["route"] == "/v1/chat/completions"
        assert flight["first_token"] is not None and flight["age"] >= flight["first_token"]
        assert flight["deltas_per_second"] > 0 and KEY not in str(flight)
        backend.gate.set()
        assert done.wait(HANG_GUARD)
        wait_until(lambda: _get(server, "/admin/api/flights").json()["flights"] == [], HANG_GUARD)


def test_recent_errors_keep_the_message_cut_and_as_sent() -> None:
    long = "x" * 5000
    streams = {**STREAMS, "demo-long": [*STREAMS["demo-midstream"][:-1], Error.network(long)]}
    app = App(EventsBackend(streams), ServerConfig(api_key=KEY, admin_key=ADMIN))
    with Server(app) as server:
        for model in ("demo-text", "demo-long", "demo-overflow"):
            httpx.post(
                server.url + "/v1/chat/completions",
                headers={"authorization": f"Bearer {KEY}"},
                json={"model": model, "messages": USER},
            )
        wait_until(
            lambda: len(_get(server, "/admin/api/errors").json()["errors"]) == 2, HANG_GUARD
        )
        answer = _get(server, "/admin/api/errors").json()
        assert answer["whole"] is False  # no store: this process's own
        overflow, cut = answer["errors"]  # newest first
        assert (
            overflow["model"] == "demo-overflow" and overflow["outcome"] == "error:context_overflow"
        )
        assert cut["outcome"] == "cut" and cut["message"].endswith("… (cut)")
        assert len(cut["message"]) < 400


def test_deployments_come_from_the_backend_when_it_has_pools() -> None:
    class Pooled(EventsBackend):
        def deployments(self) -> list[dict[str, object]]:
            return [
                {
                    "name": "east",
                    "healthy": False,
                    "cooldown_until": 12.5,
                    "api_key_env": "EAST_KEY",
                    "api_key": "sk-planted",  # a backend's slip: never shown
                }
            ]

    with dashboard() as (server, _):
        assert _get(server, "/admin/api/deployments").json() == {
            "available": False,
            "deployments": [],
            "workers": 1,
        }
    app = App(Pooled(STREAMS), ServerConfig(admin_key=ADMIN))
    with Server(app) as server:
        report = _get(server, "/admin/api/deployments").json()
        assert report == {
            "available": True,
            "deployments": [
                {
                    "name": "east",
                    "healthy": False,
                    "cooldown_until": 12.5,
                    "api_key_env": "EAST_KEY",
                }
            ],
            "workers": 1,
        }


class _Closed:
    def __init__(self) -> None:
        self.flights: list[Flight] = []

    def opened(self, flight: Flight) -> None:
        pass

    def closed(self, flight: Flight) -> None:
        self.flights.append(flight)


def test_the_playground_streams_our_events_as_the_admins_use() -> None:
    seen = _Closed()
    app = App(EventsBackend(STREAMS), ServerConfig(api_key=KEY, admin_key=ADMIN), observers=[seen])
    body = {"model": "demo-text", "context": {"messages": [{"type": "user", "content": "hi"}]}}
    with Server(app) as server:
        with httpx.stream(
            "POST",
            server.url + "/admin/api/playground",
            headers={"authorization": f"Bearer {ADMIN}"},
            json=body,
            timeout=HANG_GUARD,
        ) as answer:
            assert answer.status_code == 200
            assert answer.headers["content-type"].startswith("text/event-stream")
            assert answer.headers["x-frame-options"] == "DENY"
            text = answer.read().decode()
        unknown = httpx.post(
            server.url + "/admin/api/playground",
            headers={"authorization": f"Bearer {ADMIN}"},
            json={**body, "model": XSS_MODEL},
        )
        wait_until(lambda: len(seen.flights) == 1, HANG_GUARD)
    types = [line[7:] for line in text.splitlines() if line.startswith("event: ")]
    assert types == ["start", "text_start", "text_delta", "text_delta", "text_end", "done"]
    (flight,) = seen.flights
    assert (flight.key_id, flight.route, flight.outcome) == ("admin", "/admin/api/playground", "ok")
    assert unknown.status_code == 404


def test_with_a_store_the_errors_are_every_workers_from_the_store() -> None:
    # records another worker (or an earlier run) settled: this process never saw them
    store = seeded_store(time.time())
    (alice, *_) = store.list_keys()
    for at, outcome in [(100.0, "cut"), (300.0, "error:timeout"), (200.0, "ok")]:
        store.settle(
            None,
            UsageRecord(at=at, key_id=alice.id, route="/v1/messages", model="m", outcome=outcome),
        )
    with dashboard(store) as (server, _):
        answer = _get(server, "/admin/api/errors").json()
    assert answer["whole"] is True
    assert [(e["at"], e["outcome"], e["key_name"]) for e in answer["errors"]] == [
        (300.0, "error:timeout", "alice"),
        (100.0, "cut", "alice"),
    ]
    assert all(e["message"] is None for e in answer["errors"])  # the store keeps none
