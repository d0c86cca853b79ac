"""Every route of the server as one record: `SERVED`.

A route is everything that differs between the client APIs the server speaks:
its path and methods, what it does (`Route`), the dialect's inbound parser, its
stream encoder, the whole body of a request that did not stream, the answer to a
token count, its error shape (`Dialect`), the headers its stream adds, and where
its clients name a field. The ASGI app, the status mapping and ``/v1/models``
read the table; nothing else names a path. A new route is one record here plus
its dialect's inbound side and encoder.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Any, Final, NamedTuple, Protocol, cast

from streamfn.core.dialects.agui import AGUIEncoder, parse_agui_request
from streamfn.core.dialects.anthropic import (
    AnthropicEncoder,
    anthropic_message_body,
    parse_anthropic_request,
)
from streamfn.core.dialects.openai_chat import (
    OpenAIChatEncoder,
    openai_completion_body,
    parse_openai_request,
)
from streamfn.core.dialects.openai_responses import ResponsesEncoder
from streamfn.core.dialects.openai_responses._inbound import parse_responses_request
from streamfn.core.dialects.proxy import encode_proxy_events
from streamfn.core.dialects.ui_message_stream import UIMessageStreamEncoder, parse_ui_chat_request
from streamfn.core.dialects.ui_message_stream._encode import UI_STREAM_HEADER

from .._accumulate import accumulate
from .._count import TokenCount
from .._events import Done, Event
from ._grounding import append_sources, appending_sources
from ._inbound import parse_native_request
from ._request_fields import ClientRequest
from ._responses import KEEP_ALIVE, Encoder, Stamps, agent_encoder, each
from ._status import ANTHROPIC, OPENAI, Dialect

__all__ = [
    "COUNT_HEADER",
    "NATIVE",
    "SERVED",
    "Parser",
    "Route",
    "Served",
    "SocketEncoder",
    "dialect_for",
    "encoder_for",
    "final_body",
    "served_at",
]

Headers = tuple[tuple[bytes, bytes], ...]
#: (body, allowed server tools, the server's default model) -> the typed request
Parser = Callable[[bytes, frozenset[str], "str | None"], ClientRequest]
#: the header that says a token count is an estimate (the provider cannot count)
COUNT_HEADER: Final = b"x-streamfn-token-count"


class SocketEncoder(Protocol):
    """An encoder that also keeps each event's JSON apart, to send as a text message."""

    messages: list[bytes]

    def encode(self, event: Event) -> bytes: ...


class Route(enum.Enum):
    """What the server does with a request that passed the checks."""

    PREFLIGHT = "preflight"  # a CORS OPTIONS: `preflight_headers`, 204
    HEALTH = "health"
    MODELS = "models"
    COMPLETION = "completion"  # read the body, parse it, stream or fold
    COUNT = "count"  # read the body, parse it, count its input tokens
    ADMIN = "admin"  # the operator's (metrics, dashboard): the admin key, never a client's


def _native_keep_alive() -> bytes:
    return KEEP_ALIVE


class Served(NamedTuple):
    """One route: everything about it that differs from the other routes."""

    path: str
    methods: tuple[str, ...] = ("POST",)
    kind: Route = Route.COMPLETION
    #: the dialect's inbound parser (completion and count routes)
    parse: Parser | None = None
    #: the stream encoder and keep-alive for one request
    encoder: Callable[[ClientRequest, Stamps], Encoder] | None = None
    #: the whole body of a request that did not stream: (request, events, stamps)
    whole: Callable[[ClientRequest, list[Event], Stamps], Any] | None = None
    #: the answer to a token count (count routes)
    answer_count: Callable[[TokenCount], Any] | None = None
    #: the error shape and words of its clients
    dialect: Dialect = OPENAI
    #: headers a stream adds to the SSE ones
    headers: Headers = ()
    #: whether the dialect has a field for web-search sources (else: a last text block)
    sources: bool = True
    #: where the client's options sit and what it calls the output cap (for 400s)
    options_at: str = "request"
    max_tokens_name: str = "max_tokens"
    #: errors before any output go in-stream (the agent contract), not as an HTTP status
    early_errors_in_stream: bool = False
    #: the route also takes a WebSocket: the client event type that asks for a turn,
    #: and the encoder that keeps each event's JSON for a text message
    socket_event: str = ""
    socket_encoder: Callable[[ClientRequest, Stamps], SocketEncoder] | None = None


def _openai_chat_encoder(request: ClientRequest, stamps: Stamps) -> Encoder:
    encoder = OpenAIChatEncoder(
        response_id=f"chatcmpl-{stamps.hex_id()}",
        model=request.model,
        created=stamps.unix_time(),
        include_usage=request.include_usage,
    )
    return encoder.encode_many, encoder.keep_alive


def _openai_chat_body(request: ClientRequest, events: list[Event], stamps: Stamps) -> Any:
    return openai_completion_body(
        accumulate(events),
        response_id=f"chatcmpl-{stamps.hex_id()}",
        model=request.model,
        created=stamps.unix_time(),
    )


def _anthropic_encoder(request: ClientRequest, stamps: Stamps) -> Encoder:
    encoder = AnthropicEncoder(message_id=f"msg_{stamps.hex_id()}", model=request.model)
    return each(encoder.encode), encoder.keep_alive


def _anthropic_body(request: ClientRequest, events: list[Event], stamps: Stamps) -> Any:
    done = events[-1] if events else None
    return anthropic_message_body(
        accumulate(events),
        message_id=f"msg_{stamps.hex_id()}",
        model=request.model,
        paused=isinstance(done, Done) and done.paused is True,
    )


def _responses(request: ClientRequest, stamps: Stamps, messages: bool = False) -> ResponsesEncoder:
    return ResponsesEncoder(
        response_id=f"resp_{stamps.hex_id()}",
        model=request.model,
        created=stamps.unix_time(),
        messages=messages,
    )


def _responses_socket(request: ClientRequest, stamps: Stamps) -> SocketEncoder:
    encoder = _responses(request, stamps, messages=True)
    assert encoder.messages is not None
    return cast(SocketEncoder, encoder)


def _responses_encoder(request: ClientRequest, stamps: Stamps) -> Encoder:
    return each(_responses(request, stamps).encode), _native_keep_alive


def _responses_body(request: ClientRequest, events: list[Event], stamps: Stamps) -> Any:
    """The response of the stream's last frame: every output item, usage, status."""
    encoder = _responses(request, stamps)
    for event in events:
        encoder.encode(event)
    return encoder.final


def _ui_encoder(request: ClientRequest, stamps: Stamps) -> Encoder:
    message_id = request.echo.get("messageId") or f"msg-{stamps.hex_id()}"
    encoder = UIMessageStreamEncoder(message_id=message_id)
    return each(encoder.encode), encoder.keep_alive


def _agui_encoder(request: ClientRequest, stamps: Stamps) -> Encoder:
    encoder = AGUIEncoder(
        thread_id=request.echo["threadId"],
        run_id=request.echo["runId"],
        message_id=f"msg-{stamps.hex_id()}",
    )
    return each(encoder.encode), encoder.keep_alive


def _native_encoder(request: ClientRequest, stamps: Stamps) -> Encoder:
    return encode_proxy_events, _native_keep_alive


def _plain(parse: Callable[..., ClientRequest]) -> Parser:
    """A parser that takes no default model (the client always names one)."""
    return lambda body, tools, default: parse(body, allow_server_tools=tools)


def _front_end(parse: Callable[..., ClientRequest]) -> Parser:
    """A front-end parser: its clients often name no model, so the default applies."""
    return lambda body, tools, default: parse(
        body, allow_server_tools=tools, default_model=default
    )


def _counting(parse: Callable[..., ClientRequest]) -> Parser:
    """A count route's parser: the dialect's own, reading a count request's body."""
    return lambda body, tools, default: parse(body, allow_server_tools=tools, counting=True)


#: every route, one record each
SERVED: Final[dict[str, Served]] = {
    served.path: served
    for served in (
        Served(
            "/v1/chat/completions",
            parse=_plain(parse_openai_request),
            encoder=_openai_chat_encoder,
            whole=_openai_chat_body,
            sources=False,
        ),
        Served(
            "/v1/messages",
            parse=_plain(parse_anthropic_request),
            encoder=_anthropic_encoder,
            whole=_anthropic_body,
            dialect=ANTHROPIC,
        ),
        Served(
            "/v1/messages/count_tokens",
            kind=Route.COUNT,
            parse=_counting(parse_anthropic_request),
            answer_count=lambda counted: {"input_tokens": counted.input_tokens},
            dialect=ANTHROPIC,
        ),
        Served(
            "/v1/responses",
            parse=_plain(parse_responses_request),
            encoder=_responses_encoder,
            whole=_responses_body,
            max_tokens_name="max_output_tokens",
            socket_event="response.create",
            socket_encoder=_responses_socket,
        ),
        Served(
            "/v1/responses/input_tokens",
            kind=Route.COUNT,
            parse=_counting(parse_responses_request),
            answer_count=lambda counted: {
                "object": "response.input_tokens",
                "input_tokens": counted.input_tokens,
            },
        ),
        Served(
            "/v1/stream",
            parse=_plain(parse_native_request),
            encoder=_native_encoder,
            options_at="options",
        ),
        Served(
            "/v1/agent/stream",
            parse=_plain(parse_native_request),
            encoder=lambda request, stamps: agent_encoder(request, stamps),
            sources=False,
            options_at="options",
            early_errors_in_stream=True,
        ),
        Served(
            "/v1/ui/chat",
            parse=_front_end(parse_ui_chat_request),
            encoder=_ui_encoder,
            headers=(UI_STREAM_HEADER,),
            sources=False,
            max_tokens_name="maxOutputTokens",
        ),
        Served(
            "/v1/agui",
            parse=_front_end(parse_agui_request),
            encoder=_agui_encoder,
            sources=False,
        ),
        Served("/v1/models", methods=("GET",), kind=Route.MODELS),
        Served("/health", methods=("GET",), kind=Route.HEALTH),
        Served("/healthz", methods=("GET",), kind=Route.HEALTH),
        Served("/metrics", methods=("GET",), kind=Route.ADMIN),
    )
}

#: the route of our own events as SSE (the dashboard's playground streams through it)
NATIVE: Final = SERVED["/v1/stream"]


def served_at(path: str) -> Served | None:
    """The route at ``path``, if the server has one."""
    return SERVED.get(path)


def dialect_for(path: str) -> Dialect:
    """The error shape of the route at ``path`` (OpenAI's for a path with no route)."""
    served = SERVED.get(path)
    return OPENAI if served is None else served.dialect


def encoder_for(
    served: Served, request: ClientRequest, stamps: Stamps, *, append: bool = False
) -> Encoder:
    """The stream encoder for ``served``; ``append``: web-search sources as a last text
    block where the dialect has no field for them."""
    assert served.encoder is not None, served.path
    encode, keep_alive = served.encoder(request, stamps)
    if append and not served.sources:
        return appending_sources(encode), keep_alive
    return encode, keep_alive


def final_body(
    served: Served,
    request: ClientRequest,
    events: list[Event],
    stamps: Stamps,
    *,
    append: bool = False,
) -> Any:
    """A non-streaming response, built from the same events a stream carries."""
    assert served.whole is not None, served.path
    if append and not served.sources:
        events = append_sources(events)
    return served.whole(request, events, stamps)
