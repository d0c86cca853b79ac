"""``GET /metrics`` read by Prometheus' own parser (prometheus_client's): what the
gateway served, by model and outcome, with tokens, latencies and streams in
flight; behind the admin key; whole across ``--workers`` processes."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest
from fake_provider import FakeProvider
from loopback_server import KEY, SLOW, USER, Server, raw_post, serving, wait_until
from prometheus_client.parser import text_string_to_metric_families

from streamfn.asgi._metrics import Metrics

ADMIN = "admin-secret-for-tests"


def scrape(
    url: str, key: str | None = ADMIN
) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of a scrape: (name, sorted labels) -> value."""
    request = urllib.request.Request(url + "/metrics")
    if key is not None:
        request.add_header("authorization", f"Bearer {key}")
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
        text = response.read().decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def sample(samples: dict, name: str, **labels: str) -> float:  # type: ignore[type-arg]
    """The sum of ``name``'s samples whose labels include ``labels``."""
    return sum(
        value
        for (got, have), value in samples.items()
        if got == name and set(labels.items()) <= set(have)
    )


def status(url: str, key: str | None) -> int:
    try:
        scrape(url, key)
    except urllib.error.HTTPError as exc:
        return exc.code
    return 200


@pytest.fixture(scope="module")
def served(shell: str) -> Iterator[Server]:
    with serving(observers=[Metrics()], admin_key=ADMIN) as (server, _):
        yield server


def test_a_scrape_counts_requests_tokens_and_outcomes(served: Server) -> None:
    before = scrape(served.url)
    ok = sample(before, "streamfn_requests_total", model="demo-text", outcome="ok")
    with openai.OpenAI(base_url=served.url + "/v1", api_key=KEY, max_retries=0) as client:
        for _ in range(3):
            list(client.chat.completions.create(model="demo-text", messages=USER, stream=True))  # type: ignore[arg-type]
        with pytest.raises(openai.APIError):
            for _ in client.chat.completions.create(
                model="demo-midstream",
                messages=USER,
                stream=True,  # type: ignore[arg-type]
            ):
                pass
    wait_until(lambda: not served.app.flights.running, 10)
    after = scrape(served.url)
    assert sample(after, "streamfn_requests_total", model="demo-text", outcome="ok") == ok + 3
    assert sample(after, "streamfn_errors_total", model="demo-midstream", outcome="cut") >= 1
    # the fake's usage: 12 input, 4 output, 3 cache reads per answer
    tokens = "streamfn_tokens_total"
    assert (
        sample(after, tokens, model="demo-text", kind="input")
        - sample(before, tokens, model="demo-text", kind="input")
        == 36
    )
    assert (
        sample(after, tokens, model="demo-text", kind="cache_read")
        - sample(before, tokens, model="demo-text", kind="cache_read")
        == 9
    )
    first = "streamfn_first_output_seconds_count"
    assert sample(after, first, model="demo-text") - sample(before, first, model="demo-text") == 3
    assert sample(after, "streamfn_request_duration_seconds_count", model="demo-text") >= 3
    assert sample(after, "streamfn_streams_in_flight") == 0


@pytest.mark.usefixtures("shell")
def test_a_stream_in_flight_shows_until_it_ends() -> None:
    body = b'{"model":"demo-text","stream":true,"messages":[{"role":"user","content":"hi"}]}'
    with serving(
        observers=[Metrics()], admin_key=ADMIN, delay=SLOW, head_wait=0.05, keepalive_interval=SLOW
    ) as (server, _):
        sock = raw_post(server.port, "/v1/chat/completions", body)
        sock.settimeout(5)
        assert sock.recv(4096).startswith(b"HTTP/1.1 200")
        wait_until(lambda: server.app.flights.running, 10)
        assert sample(scrape(server.url), "streamfn_streams_in_flight", model="demo-text") == 1
        sock.close()
        wait_until(lambda: not server.app.flights.running, SLOW / 3)
        after = scrape(server.url)
        assert sample(after, "streamfn_streams_in_flight", model="demo-text") == 0
        assert sample(after, "streamfn_requests_total", outcome="disconnected") == 1


def test_only_the_admin_key_reads_metrics(served: Server) -> None:
    assert status(served.url, ADMIN) == 200
    assert status(served.url, None) == 401
    assert status(served.url, KEY) == 403  # the clients' key is not the operator's
    assert status(served.url, "wrong") == 403


@pytest.mark.usefixtures("shell")
def test_without_an_admin_key_metrics_are_off_unless_the_server_is_open() -> None:
    with serving(observers=[Metrics()]) as (server, _):  # clients need a key: off
        assert status(server.url, None) == 404
        assert status(server.url, KEY) == 404
    with serving(observers=[Metrics()], api_key=None) as (server, _):  # loopback, open
        assert status(server.url, None) == 200


def test_workers_add_up_in_every_scrape(tmp_path: Path) -> None:
    with FakeProvider() as upstream:
        config = tmp_path / "gateway.toml"
        config.write_text(
            "[[models]]\n"
            'name = "team-fast"\n'
            'upstream = "openai:gpt-4o-mini"\n'
            f'base_url = "{upstream.base_url("ok", "openai-chat", "metrics")}"\n'
            'api_key_env = "TEAM_KEY"\n'
        )
        code = "import sys; from streamfn.cli import main; sys.exit(main())"
        args = ["serve", "--no-local", "--config", str(config), "--port", "0", "--workers", "2"]
        env = {**os.environ, "TEAM_KEY": "sk-team", "STREAMFN_ADMIN_KEY": ADMIN}
        env.pop("PROMETHEUS_MULTIPROC_DIR", None)
        proc = subprocess.Popen(
            [sys.executable, "-c", code, *args], stderr=subprocess.PIPE, text=True, env=env
        )
        try:
            assert proc.stderr is not None
            match = re.search(r"http://127\.0\.0\.1:(\d+)", proc.stderr.readline())
            assert match
            url = f"http://127.0.0.1:{match.group(1)}"
            answers, deadline = 0, time.monotonic() + 60
            with openai.OpenAI(base_url=url + "/v1", api_key="-", max_retries=0, timeout=5) as c:
                while answers < 8 and time.monotonic() < deadline:
                    try:
                        c.chat.completions.create(model="team-fast", messages=USER)  # type: ignore[arg-type]
                        answers += 1
                    except openai.APIConnectionError:
                        time.sleep(0.1)  # the workers are still starting
            assert answers == 8
            # each scrape lands on either worker; each must see all eight
            for _ in range(6):
                got = sample(
                    scrape(url), "streamfn_requests_total", model="team-fast", outcome="ok"
                )
                assert got == 8
        finally:
            proc.terminate()
            proc.wait(30)
            if proc.stderr is not None:
                proc.stderr.close()


def test_each_deployment_shows_its_rest_and_load() -> None:
    from prometheus_client.parser import text_string_to_metric_families as parse

    from streamfn.core.serve._deployments import DeploymentHealth

    def health(name: str, resting: float, in_flight: int) -> DeploymentHealth:
        return DeploymentHealth(
            deployment=name,
            name="fast",
            model="openai:gpt-4o-mini",
            base_url="https://api.example",
            weight=1.0,
            in_flight=in_flight,
            requests=9,
            failures=1,
            cooling_for=resting,
            last_error=None,
        )

    pools = [health("east", 4.5, 0), health("west", 0.0, 2)]
    metrics = Metrics(lambda: pools)
    metrics.read_deployments()
    samples = {
        (s.name, s.labels["deployment"]): s.value
        for family in parse(metrics.render().decode())
        for s in family.samples
        if "deployment" in s.labels
    }
    assert samples[("streamfn_deployment_resting_seconds", "east")] == 4.5
    assert samples[("streamfn_deployment_resting_seconds", "west")] == 0
    assert samples[("streamfn_deployment_in_flight", "west")] == 2


def test_each_label_set_is_looked_up_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """prometheus_client's ``labels`` validates and locks on every call; the observer
    asks it once per label set and reuses the child (a request's eight lookups
    are dict hits from the second request on), and the counts still add up."""
    from streamfn.asgi._observe import Flight
    from streamfn.core._events import Usage

    metrics = Metrics()
    asked: list[tuple[str, ...]] = []
    for metric in (metrics.requests, metrics.in_flight, metrics.duration, metrics.tokens):
        real = metric.labels
        monkeypatch.setattr(
            metric, "labels", lambda *values, real=real: asked.append(values) or real(*values)
        )
    for n in range(5):
        flight = Flight(
            id=f"r{n}",
            route="/v1/chat/completions",
            model="m",
            stream=True,
            arrived=0.0,
            started=0.0,
        )
        metrics.opened(flight)
        flight.usage, flight.outcome, flight.ended = Usage(input=3, output=7), "ok", 0.5
        metrics.closed(flight)
    assert len(asked) == len(set(asked)) == 5  # in flight, requests, duration, 2 token kinds
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(metrics.render().decode())
        for s in family.samples
    }
    assert sample(samples, "streamfn_requests_total", outcome="ok") == 5
    assert sample(samples, "streamfn_tokens_total", kind="output") == 35
    assert sample(samples, "streamfn_streams_in_flight") == 0


def test_models_a_client_names_cannot_grow_the_labels_without_bound() -> None:
    """The model label is what the client asked for, and a refusal's outcome may quote
    it: past `DISTINCT_LABELS` values each new one counts as "other", in flight and
    out, so the gauge of streams in flight still comes back to zero."""
    from streamfn.asgi._metrics import DISTINCT_LABELS
    from streamfn.asgi._observe import Flight

    metrics = Metrics()
    for n in range(DISTINCT_LABELS + 50):
        flight = Flight(
            id=f"r{n}",
            route="/v1/chat/completions",
            model=f"m{n}",
            stream=True,
            arrived=0.0,
            started=0.0,
        )
        metrics.opened(flight)
        flight.outcome, flight.ended = f"refused:this key may not use the model 'm{n}'", 0.1
        metrics.closed(flight)
    families = list(text_string_to_metric_families(metrics.render().decode()))
    requests = [s for f in families for s in f.samples if s.name == "streamfn_requests_total"]
    models = {s.labels["model"] for s in requests}
    assert len(models) == DISTINCT_LABELS + 1 and "other" in models
    assert sum(s.value for s in requests if s.labels["model"] == "other") == 50
    outcomes = {s.labels["outcome"] for s in requests}
    assert len(outcomes) <= DISTINCT_LABELS + 1
    in_flight = [s for f in families for s in f.samples if s.name == "streamfn_streams_in_flight"]
    assert sum(s.value for s in in_flight) == 0
