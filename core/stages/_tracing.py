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

from functools import lru_cache
from typing import Any, Final
from urllib.parse import urlsplit

from .._events import StopReason
from .._options import Options
from ..catalogue._models import Model

__all__ = [
    "FINISH_REASONS",
    "OTEL_PROVIDER_NAMES",
    "otel_provider_name",
    "request_attributes",
]

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


@lru_cache(maxsize=64)
def _server(url: str) -> tuple[str, int] | None:
    """The host and port of a base URL (remembered: every stream asks for its model's)."""
    parts = urlsplit(url)
    if not parts.hostname:
        return None
    return parts.hostname, parts.port or (443 if parts.scheme == "https" else 80)


def request_attributes(model: Model, options: Options) -> dict[str, Any]:
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
