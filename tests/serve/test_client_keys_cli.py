"""Bills proved with the real ``streamfn serve``: client keys in a real store, several
worker processes and two servers sharing one, and the real ``streamfn keys`` command.

The upstream is the loopback fake provider, priced by the config file (an operator's
``[models.prices]``): its answer (5 input and 8 output tokens) costs `ANSWER_COST`.
Every refused request is proved never sent by the fake's request count; every
bill is read back from the store's usage records.
"""

from __future__ import annotations

import http.client
import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_provider import FakeProvider
from loopback_server import serve_cli, wait_until

from streamfn import cli
from streamfn.asgi._keys import KEY_CACHE_SECONDS
from streamfn.cli._serve_config import ConfigError, load_gateway_config
from streamfn.ledger import ClientKey, Store, UsageRecord, open_store

USER = [{"role": "user", "content": "hi"}]
#: US dollars per million tokens: the fake's answer (5 in, 8 out) costs $0.021
PRICE_IN, PRICE_OUT = 1000.0, 2000.0
ANSWER_COST = (5 * PRICE_IN + 8 * PRICE_OUT) / 1e6
WORKERS = 4
#: the outcomes of requests that never went upstream: refused by the store, or capped at
#: less than their input alone would cost ("not sent", before any output)
NOT_SENT = ("refused:", "error:budget")


def _config(path: Path, upstream: FakeProvider, token: str) -> Path:
    path.write_text(
        f"""
[[models]]
name = "priced"
api = "openai-chat"
id = "fake"
base_url = "{upstream.base_url("ok", "openai-chat", token)}"
api_key_env = "GK_UPSTREAM"
max_output = 64
[models.prices]
input = {PRICE_IN}
output = {PRICE_OUT}
"""
    )
    return path


def _post(url: str, secret: str, path: str = "/v1/chat/completions") -> int:
    body = {"model": "priced", "messages": USER, "max_tokens": 16}
    conn = http.client.HTTPConnection(url.removeprefix("http://"), timeout=30)
    try:
        headers = {"content-type": "application/json", "authorization": f"Bearer {secret}"}
        conn.request("POST", path, json.dumps(body).encode(), headers)
        answer = conn.getresponse()
        answer.read()
        return answer.status
    finally:
        conn.close()


def _get(url: str, secret: str, path: str = "/v1/models") -> int:
    conn = http.client.HTTPConnection(url.removeprefix("http://"), timeout=30)
    try:
        conn.request("GET", path, headers={"authorization": f"Bearer {secret}"})
        answer = conn.getresponse()
        answer.read()
        return answer.status
    finally:
        conn.close()


def _records(store: Store, key: ClientKey) -> list[UsageRecord]:
    return store.records(since=0, until=time.time() + 60, key_id=key.id)


def test_the_config_prices_a_model_and_turns_client_keys_on(tmp_path: Path) -> None:
    path = tmp_path / "gateway.toml"
    path.write_text(
        "[keys]\nstore = 'sqlite:///tmp/x.db'\n[[models]]\nname = 'm'\napi = 'openai-chat'\n"
        "id = 'x'\nbase_url = 'http://h.test/v1'\n"
        "[models.prices]\ninput = 0.5\noutput = 1.5\ncache_read = 0.05\n"
    )
    gateway = load_gateway_config(path)
    model = gateway.models[0].model
    assert (model.price_input, model.price_output, model.price_cache_read) == (0.5, 1.5, 0.05)
    assert gateway.store == "sqlite:///tmp/x.db"
    path.write_text(path.read_text().replace("store = 'sqlite:///tmp/x.db'\n", ""))
    assert load_gateway_config(path).store == ""  # [keys] alone: the default store
    path.write_text(path.read_text().replace("input = 0.5", "input = -1"))
    with pytest.raises(ConfigError, match=r"models\[0\] \(m\)\.prices: input must be 0 or more"):
        load_gateway_config(path)


def test_client_keys_and_one_shared_key_together_are_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = f"sqlite://{tmp_path / 'keys.db'}"
    assert cli.main(["serve", "--no-local", "--store", store, "--api-key", "k"]) == 2
    assert "drop the shared one" in capsys.readouterr().err


@pytest.fixture(scope="module")
def upstream() -> Iterator[FakeProvider]:
    with FakeProvider() as fake:
        yield fake


class Workers:
    """``streamfn serve --workers 4`` on one SQLite store, and that store."""

    def __init__(self, url: str, store: Store, store_url: str, upstream: FakeProvider) -> None:
        self.url, self.store, self.store_url, self.upstream = url, store, store_url, upstream

    def key(self, **limits: object) -> tuple[ClientKey, str]:
        return self.store.create_key("k", now=time.time(), **limits)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def workers(upstream: FakeProvider, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workers]:
    folder = tmp_path_factory.mktemp("workers")
    store_url = f"sqlite://{folder / 'gateway.db'}"
    store = open_store(store_url)
    config = _config(folder / "gateway.toml", upstream, "workers")
    args = ["--config", str(config), "--store", store_url, "--workers", str(WORKERS)]
    try:
        with serve_cli(args, {"GK_UPSTREAM": "sk-upstream"}, api_key=None) as url:
            yield Workers(url, store, store_url, upstream)
    finally:
        store.close()


def test_concurrent_clients_on_workers_overspend_by_at_most_one_request_per_worker(
    workers: Workers,
) -> None:
    budget = 10 * ANSWER_COST
    key, secret = workers.key(budget=budget)
    statuses: list[int] = []
    lock = threading.Lock()

    def client() -> None:
        for _ in range(40):  # far more than the budget pays for
            status = _post(workers.url, secret)
            with lock:
                statuses.append(status)
            if status == 403:
                return

    before = workers.upstream.hits("workers")
    threads = [threading.Thread(target=client) for _ in range(4 * WORKERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert set(statuses) <= {200, 403} and 403 in statuses
    # a refusal while others' reservations were held: spend, one at a time, until none is left
    wait_until(lambda: len(_records(workers.store, key)) == len(statuses), 30)
    for _ in range(20):  # none in flight now: the first refusal says the budget is spent
        statuses.append(_post(workers.url, secret))
        wait_until(lambda: len(_records(workers.store, key)) == len(statuses), 30)
        if statuses[-1] == 403:
            break
    records = _records(workers.store, key)
    spent = sum(r.cost or 0.0 for r in records)
    assert budget - ANSWER_COST <= spent <= budget + WORKERS * ANSWER_COST
    went_up = [r for r in records if not r.outcome.startswith(NOT_SENT)]
    assert workers.upstream.hits("workers") - before == len(went_up)  # no refusal went up


def test_a_key_revoked_with_the_command_is_refused_by_every_worker_within_a_second(
    workers: Workers,
) -> None:
    key, secret = workers.key()
    for _ in range(3 * WORKERS):  # new connections: every worker has seen the key
        assert _get(workers.url, secret) == 200
    code = "import sys; from streamfn.cli import main; sys.exit(main())"
    revoke = ["keys", "revoke", key.id, "--store", workers.store_url]
    subprocess.run([sys.executable, "-c", code, *revoke], check=True, capture_output=True)
    assert _post(workers.url, secret) == 401  # admission reads the key afresh
    time.sleep(KEY_CACHE_SECONDS)
    assert {_get(workers.url, secret) for _ in range(3 * WORKERS)} == {401}


def test_two_servers_on_one_postgresql_share_rpm_and_budget(
    upstream: FakeProvider, tmp_path: Path
) -> None:
    from postgres_server import postgres_server

    with postgres_server() as postgres:
        store_url = postgres.fresh_database()
        store = open_store(store_url)
        config = _config(tmp_path / "gateway.toml", upstream, "two-hosts")
        args = ["--config", str(config), "--store", store_url]
        env = {"GK_UPSTREAM": "sk-upstream"}
        try:
            with (
                serve_cli(args, env, api_key=None) as first,
                serve_cli(args, env, api_key=None) as second,
            ):
                _, limited = store.create_key("rpm", now=time.time(), rpm=3)
                assert [_post(url, limited) for url in (first, second, first)] == [200] * 3
                assert _post(second, limited) == 429 and _post(first, limited) == 429
                key, spender = store.create_key("budget", now=time.time(), budget=2 * ANSWER_COST)
                before = upstream.hits("two-hosts")
                statuses = [_post(url, spender) for url in (first, second) * 3]
                assert statuses.count(200) <= 3 and statuses[-2:] == [403, 403]
                wait_until(lambda: len(_records(store, key)) == len(statuses), 30)
                records = _records(store, key)
                spent = sum(r.cost or 0.0 for r in records)
                assert spent <= 2 * ANSWER_COST + ANSWER_COST
                went_up = [r for r in records if not r.outcome.startswith(NOT_SENT)]
                assert upstream.hits("two-hosts") - before == len(went_up)
        finally:
            store.close()
