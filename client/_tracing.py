"""The tracing stage: each request in an OpenTelemetry GenAI span with its metrics.

What goes into a span (the attribute and finish-reason tables) is decided in
`streamfn.core.stages._tracing`; this looks OpenTelemetry up once and records the stream.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any, Final

from streamfn.core import Done, Error, Event, Model, Options, Start
from streamfn.core.stages._tracing import FINISH_REASONS, request_attributes

from ._batches import Batches

__all__ = ["reset_instruments", "traced"]

_SCOPE: Final = "streamfn"
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
    attributes = request_attributes(model, options)
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
