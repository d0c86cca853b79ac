"""OpenTelemetry GenAI spans and metrics for every stream the shells run.

When ``opentelemetry-api`` is installed (``pip install 'streamfn[otel]'``),
each model call is a ``chat {model}`` CLIENT span with the GenAI semantic
conventions' attributes (operation, provider, request and response model,
response id, finish reason, input/output and cache token counts, server
address, ``error.type`` as our `ErrorKind`), and records the client metrics
``gen_ai.client.operation.duration``, ``gen_ai.client.token.usage`` and
``gen_ai.client.operation.time_to_first_chunk``. Without the package this
module costs one failed import at start and nothing per stream; with it but
no SDK configured, OpenTelemetry's own no-op tracer is all there is.

``gen_ai.provider.name`` takes the conventions' registry value for the
providers it names (`OTEL_PROVIDER_NAMES`: ``gcp.gemini``, ``aws.bedrock``,
``x_ai`` ...) and our provider name, as a custom value, for the others
(OpenRouter, Ollama, a vLLM server). ``gen_ai.response.model`` is the model the
response names (`Start.response_model`), not the one asked for, and is left
out where the wire does not say (Bedrock's Converse stream).
https://opentelemetry.io/docs/specs/semconv/registry/attributes/gen-ai/

What never goes into a span: keys, headers, prompt or answer text, and
provider error messages (they can echo a masked key); the error's kind says
what went wrong. A fallback chain or a Responses upgrade is one span per
model called, so the trace shows which model answered.

The clock is the shell's (durations are measured on its monotonic clock);
span timestamps are OpenTelemetry's.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from functools import lru_cache
from typing import Any, Final
from urllib.parse import urlsplit

from .batches import Batches
from .events import Done, Error, Event, Start, StopReason
from .models import Model
from .options import Options

__all__ = ["FINISH_REASONS", "OTEL_PROVIDER_NAMES", "otel_provider_name", "traced"]

_SCOPE: Final = "streamfn"
#: our stop reasons in the words the GenAI conventions use for finish reasons
FINISH_REASONS: Final = {
    StopReason.STOP: "stop",
    StopReason.LENGTH: "length",
    StopReason.TOOL_USE: "tool_call",
    StopReason.ERROR: "error",
    StopReason.ABORTED: "cancelled",
}
#: our provider names -> the GenAI registry's ``gen_ai.provider.name`` values
OTEL_PROVIDER_NAMES: Final = {
    "openai": "openai",
    "azure": "azure.ai.openai",
    "anthropic": "anthropic",
    "google": "gcp.gemini",
    "gemini": "gcp.gemini",
    "vertex": "gcp.vertex_ai",
    "bedrock": "aws.bedrock",
    "xai": "x_ai",
    "mistral": "mistral_ai",
    "deepseek": "deepseek",
    "groq": "groq",
    "perplexity": "perplexity",
    "cohere": "cohere",
    "watsonx": "ibm.watsonx.ai",
}


def otel_provider_name(model: Model) -> str:
    """``gen_ai.provider.name`` for ``model``: the registry's value, else our own name
    (the conventions ask for a custom friendly name where none of theirs applies)."""
    return OTEL_PROVIDER_NAMES.get(model.provider, model.provider)


#: the conventions' bucket boundaries for token counts
_TOKEN_BUCKETS: Final = (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304)


class _Instruments:
    """The tracer and metric instruments, made once (OpenTelemetry caches them anyway)."""

    def __init__(self, trace: Any, metrics: Any) -> None:
        self.trace = trace
        self.tracer = trace.get_tracer(_SCOPE)
        meter = metrics.get_meter(_SCOPE)
        self.duration = meter.create_histogram(
            "gen_ai.client.operation.duration", unit="s", description="GenAI operation duration"
        )
        self.tokens = meter.create_histogram(
            "gen_ai.client.token.usage",
            unit="{token}",
            description="Number of input and output tokens used",
            explicit_bucket_boundaries_advisory=list(_TOKEN_BUCKETS),
        )
        self.first_chunk = meter.create_histogram(
            "gen_ai.client.operation.time_to_first_chunk",
            unit="s",
            description="Time to receive the first chunk of a streamed response",
        )


def _load() -> _Instruments | None:
    try:
        trace = importlib.import_module("opentelemetry.trace")
        metrics = importlib.import_module("opentelemetry.metrics")
    except ImportError:
        return None
    return _Instruments(trace, metrics)


_instruments: _Instruments | bool | None = False  # False: not looked up yet


def _get() -> _Instruments | None:
    global _instruments
    if _instruments is False:
        _instruments = _load()
    return _instruments if isinstance(_instruments, _Instruments) else None


def reset_instruments() -> None:
    """Look the providers up again (after a test or an app installs new ones)."""
    global _instruments
    _instruments = False


@lru_cache(maxsize=64)
def _server(url: str) -> tuple[str, int] | None:
    """The host and port of a base URL (remembered: every stream asks for its model's)."""
    parts = urlsplit(url)
    if not parts.hostname:
        return None
    return parts.hostname, parts.port or (443 if parts.scheme == "https" else 80)


def _request_attributes(model: Model, options: Options) -> dict[str, Any]:
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": otel_provider_name(model),
        "gen_ai.request.model": model.id,
    }
    url = options.base_url or model.base_url
    server = _server(url) if url else None
    if server is not None:
        attributes["server.address"], attributes["server.port"] = server
    for name, value in (
        ("gen_ai.request.max_tokens", options.max_tokens),
        ("gen_ai.request.temperature", options.temperature),
        ("gen_ai.request.top_p", options.top_p),
        ("gen_ai.request.top_k", options.top_k),
        ("gen_ai.request.seed", options.seed),
    ):
        if value is not None:
            attributes[name] = value
    return attributes


def traced(
    events: Batches,
    model: Model,
    options: Options,
    clock: Callable[[], float],
) -> Batches:
    """``events`` (a stream of batches) inside a GenAI span with its metrics; ``events`` itself without OpenTelemetry."""
    instruments = _get()
    if instruments is None:
        return events
    return _traced(instruments, events, model, options, clock)


async def _traced(
    instruments: _Instruments,
    events: Batches,
    model: Model,
    options: Options,
    clock: Callable[[], float],
) -> Batches:
    attributes = _request_attributes(model, options)
    common = {
        k: v
        for k, v in attributes.items()
        if k in ("gen_ai.operation.name", "gen_ai.provider.name", "gen_ai.request.model")
    }
    span = instruments.tracer.start_span(
        f"chat {model.id}", kind=instruments.trace.SpanKind.CLIENT, attributes=attributes
    )
    began = clock()
    first: float | None = None
    error_type: str | None = None
    ended = False  # the terminal event went by: a close after it is no cancellation
    try:
        async for batch in events:
            # one request's stream: its Start comes first, its terminal event last, and
            # nothing between says anything a span records
            if first is None and any(not isinstance(event, Start) for event in batch):
                first = clock() - began
            _observe(span, batch[0], instruments, common)
            last = batch[-1]
            if len(batch) > 1:
                _observe(span, last, instruments, common)
            if isinstance(last, (Done, Error)):
                ended = True
                if isinstance(last, Error):
                    error_type = last.kind.value if last.kind else "error"
            yield batch
    except BaseException as exc:
        if not ended:
            error_type = "cancelled" if _cancelled(exc) else type(exc).__qualname__
        raise
    finally:
        await events.aclose()
        if error_type is not None:
            span.set_attribute("error.type", error_type)
            span.set_status(
                instruments.trace.Status(instruments.trace.StatusCode.ERROR, error_type)
            )
            common = {**common, "error.type": error_type}
        instruments.duration.record(clock() - began, common)
        if first is not None:
            instruments.first_chunk.record(first, common)
        span.end()


def _observe(span: Any, event: Event, instruments: _Instruments, common: dict[str, Any]) -> None:
    if isinstance(event, Start):
        if event.response_id:
            span.set_attribute("gen_ai.response.id", event.response_id)
        if event.response_model:
            span.set_attribute("gen_ai.response.model", event.response_model)
        return
    if not isinstance(event, (Done, Error)):
        return
    span.set_attribute("gen_ai.response.finish_reasons", [FINISH_REASONS[event.stop_reason]])
    usage = event.usage
    if usage is None:
        return
    prompt = usage.input + usage.cache_read + usage.cache_write
    span.set_attribute("gen_ai.usage.input_tokens", prompt)
    span.set_attribute("gen_ai.usage.output_tokens", usage.output)
    if usage.cache_read:
        span.set_attribute("gen_ai.usage.cache_read.input_tokens", usage.cache_read)
    if usage.cache_write:
        span.set_attribute("gen_ai.usage.cache_creation.input_tokens", usage.cache_write)
    instruments.tokens.record(prompt, {**common, "gen_ai.token.type": "input"})
    instruments.tokens.record(usage.output, {**common, "gen_ai.token.type": "output"})


def _cancelled(exc: BaseException) -> bool:
    name = type(exc).__name__
    return name in ("CancelledError", "Cancelled", "GeneratorExit")
