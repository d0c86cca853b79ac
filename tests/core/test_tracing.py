"""OpenTelemetry GenAI spans and metrics, read back through the SDK's in-memory exporters."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk")

from fake_provider import FakeProvider
from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from streamfn.client import _tracing as tracing
from streamfn.core import Context, Model, Options, Start, fallback, replay
from streamfn.core.stages import _tracing as tracing_rules
from streamfn.io_asyncio import Client
from streamfn.io_sync import Client as SyncClient

SECRET = "sk-planted-secret-0123456789"
EXPORTER = InMemorySpanExporter()
READER = InMemoryMetricReader()


@pytest.fixture(scope="module", autouse=True)
def providers() -> Iterator[None]:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(EXPORTER))
    trace.set_tracer_provider(provider)
    metrics.set_meter_provider(MeterProvider(metric_readers=[READER]))
    tracing.reset_instruments()
    yield
    tracing.reset_instruments()


@pytest.fixture
def server() -> Iterator[FakeProvider]:
    with FakeProvider() as fake:
        yield fake


def run(model: Model, options: Options, environ: dict[str, str] | None = None) -> list[Any]:
    async def main() -> list[Any]:
        async with (
            Client(environ=environ or {}) as client,
            client.stream(model, Context.of("hi"), options) as events,
        ):
            return [e async for e in events]

    EXPORTER.clear()
    return asyncio.run(main())


def spans() -> list[ReadableSpan]:
    return list(EXPORTER.get_finished_spans())


def metric_points() -> dict[str, list[Any]]:
    data = READER.get_metrics_data()
    out: dict[str, list[Any]] = {}
    for resource in data.resource_metrics if data else ():
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                out.setdefault(metric.name, []).extend(metric.data.data_points)
    return out


def test_a_stream_is_one_client_span_with_the_genai_attributes(server: FakeProvider) -> None:
    url = server.base_url("ok", "openai-chat", "otel-ok")
    model = Model(id="gpt-x", provider="openai", api="openai-chat", base_url=url)
    events = run(model, Options(api_key=SECRET, max_tokens=50, temperature=0.5))
    expected = replay("openai-chat", server.body_for("openai-chat"))
    (span,) = spans()
    assert span.name == "chat gpt-x" and span.kind == trace.SpanKind.CLIENT
    a = dict(span.attributes or {})
    done = events[-1]
    assert a["gen_ai.operation.name"] == "chat"
    assert a["gen_ai.provider.name"] == "openai"
    assert a["gen_ai.request.model"] == "gpt-x"
    assert (a["gen_ai.request.max_tokens"], a["gen_ai.request.temperature"]) == (50, 0.5)
    assert (a["server.address"], a["server.port"]) == ("127.0.0.1", server.port)
    assert a["gen_ai.response.id"] == expected[0].response_id
    assert a["gen_ai.response.model"] == "fake"  # what the response named, not "gpt-x"
    assert a["gen_ai.response.finish_reasons"] == ("stop",)
    assert a["gen_ai.usage.output_tokens"] == done.usage.output
    assert a["gen_ai.usage.input_tokens"] == done.usage.input + done.usage.cache_read
    assert "error.type" not in a and span.status.status_code != trace.StatusCode.ERROR
    points = metric_points()
    assert {
        "gen_ai.client.operation.duration",
        "gen_ai.client.token.usage",
        "gen_ai.client.operation.time_to_first_chunk",
    } <= set(points)
    types = {p.attributes.get("gen_ai.token.type") for p in points["gen_ai.client.token.usage"]}
    assert types == {"input", "output"}


def test_the_blocking_shell_records_the_same_span(server: FakeProvider) -> None:
    url = server.base_url("ok", "openai-chat", "otel-sync")
    model = Model(id="gpt-x", provider="openai", api="openai-chat", base_url=url)
    options = Options(api_key=SECRET, max_tokens=50)
    run(model, options)
    (async_span,) = spans()
    EXPORTER.clear()
    with (
        SyncClient(environ={}) as client,
        client.stream(model, Context.of("hi"), options) as events,
    ):
        seen = list(events)
    assert seen[-1] == replay("openai-chat", server.body_for("openai-chat"))[-1]
    (sync_span,) = spans()
    assert sync_span.name == async_span.name and sync_span.kind == async_span.kind
    assert dict(sync_span.attributes or {}) == dict(async_span.attributes or {})
    assert sync_span.end_time is not None


def test_an_error_is_its_kind_and_no_secret_reaches_any_attribute(server: FakeProvider) -> None:
    url = server.base_url("401", "openai-chat", "otel-401")
    model = Model(
        id="gpt-x",
        provider="openai",
        api="openai-chat",
        base_url=url,
        headers={"X-Org-Key": SECRET},
    )
    run(model, Options(api_key=SECRET, max_attempts=1))
    (span,) = spans()
    assert span.attributes is not None and span.attributes["error.type"] == "auth"
    assert span.status.status_code == trace.StatusCode.ERROR
    assert span.status.description == "auth"
    everything = repr(
        [(s.name, dict(s.attributes or {}), s.status.description, s.events) for s in spans()]
    ) + repr(READER.get_metrics_data())
    assert SECRET not in everything


def test_a_fallback_chain_traces_each_model_it_called(server: FakeProvider) -> None:
    first = Model(
        id="a",
        provider="openai",
        api="openai-chat",
        base_url=server.base_url("429", "openai-chat", "otel-fb-a"),
    )
    second = Model(
        id="b",
        provider="groq",
        api="openai-chat",
        base_url=server.base_url("ok", "openai-chat", "otel-fb-b"),
    )
    environ = {"OPENAI_API_KEY": "k1", "GROQ_API_KEY": "k2"}
    run(fallback([first, second]), Options(max_attempts=1), environ)
    got = [(s.name, (s.attributes or {}).get("error.type")) for s in spans()]
    assert got == [("chat a", "throttled"), ("chat b", None)]


def test_without_opentelemetry_the_stream_is_not_wrapped(monkeypatch: pytest.MonkeyPatch) -> None:
    async def events() -> Any:
        yield None

    monkeypatch.setattr(tracing, "_instruments", None)
    stream = events()
    model = Model(id="m", provider="p", api="openai-chat", base_url="http://x")
    assert tracing.traced(stream, model, Options(), lambda: 0.0) is stream


def test_a_caller_who_leaves_early_is_a_cancelled_span(server: FakeProvider) -> None:
    url = server.base_url("ok", "openai-chat", "otel-break")
    model = Model(id="gpt-x", provider="openai", api="openai-chat", base_url=url)

    async def main() -> None:
        async with (
            Client(environ={}) as client,
            client.stream(model, Context.of("hi"), Options(api_key="k")) as events,
        ):
            async for event in events:
                if not isinstance(event, Start):
                    break  # the first output is enough for this caller

    EXPORTER.clear()
    asyncio.run(main())
    (span,) = spans()
    assert (span.attributes or {})["error.type"] == "cancelled"


def test_provider_names_are_the_genai_registry_values() -> None:
    """Checked against the registry as the OpenTelemetry semantic-conventions package
    ships it (`GenAiProviderNameValues`), not against our own table."""
    from opentelemetry.semconv._incubating.attributes.gen_ai_attributes import (
        GenAiProviderNameValues,
    )

    registry = {member.value for member in GenAiProviderNameValues}
    assert set(tracing_rules.OTEL_PROVIDER_NAMES.values()) <= registry

    def name(provider: str) -> str:
        return tracing_rules.otel_provider_name(
            Model(id="m", provider=provider, api="openai-chat", base_url="")
        )

    expected = {
        "openai": GenAiProviderNameValues.OPENAI,
        "anthropic": GenAiProviderNameValues.ANTHROPIC,
        "google": GenAiProviderNameValues.GCP_GEMINI,
        "vertex": GenAiProviderNameValues.GCP_VERTEX_AI,
        "bedrock": GenAiProviderNameValues.AWS_BEDROCK,
        "azure": GenAiProviderNameValues.AZURE_AI_OPENAI,
        "xai": GenAiProviderNameValues.X_AI,
        "mistral": GenAiProviderNameValues.MISTRAL_AI,
        "deepseek": GenAiProviderNameValues.DEEPSEEK,
        "groq": GenAiProviderNameValues.GROQ,
    }
    for provider, member in expected.items():
        assert name(provider) == member.value, provider
    assert name("openrouter") == "openrouter"  # none of the registry's: our own name


@pytest.mark.parametrize(
    ("provider", "api", "otel_name", "response_model"),
    [
        ("google", "gemini", "gcp.gemini", None),  # the fake's Gemini stream names no model
        ("anthropic", "anthropic", "anthropic", "claude-fake"),
        ("ollama", "ollama", "ollama", "fake"),
    ],
)
def test_each_span_names_the_provider_and_the_model_that_answered(
    server: FakeProvider, provider: str, api: str, otel_name: str, response_model: str | None
) -> None:
    url = server.base_url("ok", api, f"otel-{provider}")
    run(Model(id="asked-for", provider=provider, api=api, base_url=url), Options(api_key=SECRET))
    (span,) = spans()
    a = dict(span.attributes or {})
    assert a["gen_ai.provider.name"] == otel_name
    assert a["gen_ai.request.model"] == "asked-for"
    assert a.get("gen_ai.response.model") == response_model
