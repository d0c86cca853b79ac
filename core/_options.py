"""Per-call options: generation knobs, credentials, and the caps/timers the shells enforce.

One struct for everything a caller may tune, so `stream(model, context, options)`
has one shape across providers, shells and the local model. What a given
model cannot take (see `capabilities`) is dropped or clamped by its request
builder, with a ``streamfn`` warning naming the option and the model.
The core never reads a clock: the timeout fields are data for the shells.
"""

from __future__ import annotations

import enum
import math
from typing import TYPE_CHECKING, Any, Final, Literal, TypeAlias

import msgspec

from ._errors import UsageError
from ._redact import redacted_repr

if TYPE_CHECKING:
    from .stages._tool_checks import ToolCallRepair

__all__ = [
    "CLIENT_FIELDS",
    "AWSCredentials",
    "CachePoint",
    "CacheSetting",
    "CacheTTL",
    "Options",
    "RecoverMode",
    "ThinkingLevel",
    "ThinkingName",
    "Transport",
    "client_fields",
]


# -- prompt-cache breakpoints (placed per provider by `streamfn.core.content._cache_points`)

CacheTTL: TypeAlias = Literal["5m", "1h"]


class CachePoint(msgspec.Struct, frozen=True):
    """Cache the prompt up to and including ``at``: ``"tools"``, ``"system"``, or a
    turn as sent (an index into the provider's messages, negative from the end; the
    tool results answering one assistant turn are one turn). ``ttl`` "5m" or "1h"."""

    at: Literal["system", "tools"] | int
    ttl: CacheTTL = "5m"


CacheSetting: TypeAlias = Literal["off", "auto"] | list[CachePoint]

#: how a stream cut after output began goes on (``Options.recover``)
RecoverMode: TypeAlias = Literal["resume", "continue"]

#: how a request travels (``Options.transport``)
Transport: TypeAlias = Literal["http", "websocket"]


class ThinkingLevel(enum.StrEnum):
    """Reasoning effort, mapped to each provider's knob (budget tokens or effort)."""

    OFF = "off"
    MINIMAL = "minimal"
    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"
    #: above high, where the model has it (OpenAI gpt-5.2+ ``xhigh``; Claude Opus 4.7
    #: ``xhigh``, ``max`` on Opus 4.6); elsewhere the nearest level it takes, with a warning
    XHIGH = "xhigh"


#: the strings users write for a `ThinkingLevel` (``Options(thinking="high")``)
ThinkingName: TypeAlias = Literal["off", "minimal", "low", "medium", "high", "xhigh"]


class AWSCredentials(msgspec.Struct, frozen=True, kw_only=True):
    """AWS keys for SigV4 (Bedrock): long-term, or temporary with a session token.

    The names are the ones of the ``AWS_*`` variables they usually come from.
    ``repr`` shows none of them, only whether a session token is there.
    """

    access_key_id: str
    secret_access_key: str
    session_token: str | None = None

    def __post_init__(self) -> None:
        if not self.access_key_id or not self.secret_access_key:
            raise UsageError("AWSCredentials needs a non-empty access_key_id and secret_access_key")

    def __repr__(self) -> str:
        token = ", session_token=***" if self.session_token else ""
        return f"AWSCredentials(access_key_id=***, secret_access_key=***{token})"


class Options(msgspec.Struct, kw_only=True):
    """Options for one call. ``api_key`` never appears in ``repr()``, nor do the
    values of ``headers`` and ``extra_body`` (their keys do).

    Caps (bytes) bound the memory a stream may hold; exceeding one ends the
    stream with ``Error(kind=limit)``. Timers (seconds) are enforced by the
    shells: ``first_byte_timeout`` is long because reasoning models think
    before they say anything; ``idle_timeout`` applies between chunks after
    that, and SSE keep-alive comments reset it.
    """

    # generation
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    max_tokens: int | None = None
    stop: list[str] | None = None
    seed: int | None = None
    tool_choice: str | None = None  # "auto", "none", "required", or a tool name
    thinking: ThinkingLevel | None = None
    thinking_budget: int | None = None  # explicit token budget, overrides the level
    #: Claude's ``thinking.display``: "summarized" (the thinking text is returned) or
    #: "omitted" (only its signature, for the next turn: less to stream); None leaves
    #: the model's default. Other providers have no such knob and ignore it.
    thinking_display: Literal["summarized", "omitted"] | None = None
    n: int | None = None
    #: tool calls written in text to turn into tool-call blocks: markup names from
    #: `streamfn.core.stages._text_tools.MARKUPS` ("mcp", "hermes", "llama"); None: off
    text_tool_calls: list[str] | None = None
    #: structured output: a JSON Schema dict, or a type described as one (a msgspec
    #: Struct, dataclass, TypedDict or pydantic model); `complete()` sets
    #: ``message.parsed``. See `streamfn.core.json._structured`.
    response_schema: Any = None
    #: prompt caching: "off", "auto" (system, tools and the last turn) or explicit
    #: `CachePoint` breakpoints; None leaves the provider's default. See `cache_points`.
    cache: CacheSetting | None = None
    #: OpenAI ``prompt_cache_key``; under cache="auto" one is derived from the
    #: system prompt and tools when unset
    cache_key: str | None = None
    # credentials and routing
    api_key: str | None = None
    #: SigV4 keys for Bedrock (``api_key`` is then left out; a Bedrock API key goes there)
    aws_credentials: AWSCredentials | None = None
    base_url: str | None = None
    headers: dict[str, str] | None = None
    extra_body: dict[str, Any] | None = None
    # caps enforced by the core
    max_line_bytes: int = 1 << 20
    max_event_bytes: int = 16 << 20
    max_error_body_bytes: int = 1 << 20
    #: the most one call may spend, in US dollars, priced with the model's prices:
    #: counted as the answer streams, over every request the call makes (retries,
    #: fallbacks, continued turns, recoveries); crossing it ends the stream with
    #: ``Error(kind=budget)`` and closes the connection, and a request whose input
    #: alone would cross it is never sent. None: no cap. See `streamfn.core.stages._spend`.
    max_cost: float | None = None
    # caps and timers enforced by the shells
    max_response_bytes: int = 256 << 20
    max_content_bytes: int = 64 << 20
    connect_timeout: float = 10.0
    first_byte_timeout: float = 600.0
    idle_timeout: float = 120.0
    total_timeout: float | None = None
    max_attempts: int = 3
    retry_base_delay: float = 0.5
    retry_max_delay: float = 30.0
    # what the shells' pipeline does after the stream (see the modules named)
    #: how many times a turn the provider paused (Anthropic ``pause_turn``) is continued
    #: by one more request each, its whole input billed again; 0 turns it off and the
    #: caller sees ``Done.paused``. See `streamfn.core.stages._pause_turn`.
    pause_turn_continuations: int = 5
    #: called with a finished tool call whose arguments still break its tool's schema
    #: after the deterministic repairs, and the errors; returns a replacement `ToolCall`
    #: or None. See `streamfn.core.stages._tool_checks`.
    repair_tool_call: Any = None
    #: a stream cut after output began (a network error) goes on: "resume" (the
    #: same response, OpenAI Responses background mode) or "continue" (a new
    #: request with the partial answer as prefill); None: off. See `recovery`.
    recover: RecoverMode | None = None
    #: the most cuts one stream survives (each costs at least one more request)
    max_recoveries: int = 2
    #: how the request travels: "http" (a POST, the answer streamed back), or
    #: "websocket" (``openai-responses`` only: one WebSocket per turn, the request
    #: as a ``response.create`` message, the same events). See `streamfn.core.http`.
    transport: Transport = "http"

    def __post_init__(self) -> None:
        if self.thinking is not None and not isinstance(self.thinking, ThinkingLevel):
            self.thinking = ThinkingLevel(self.thinking)  # "high" -> ThinkingLevel.HIGH
        if self.thinking_display not in (None, "summarized", "omitted"):
            raise ValueError(
                f'thinking_display={self.thinking_display!r}: use "summarized", "omitted" or None'
            )
        cache: Any = self.cache
        if isinstance(cache, str) and cache not in ("off", "auto"):
            raise ValueError(f'cache={cache!r}: use "off", "auto" or a list of CachePoint')
        if isinstance(cache, list) and not all(isinstance(p, CachePoint) for p in cache):
            raise ValueError("cache: a list holds CachePoint(at, ttl) breakpoints only")
        if self.recover not in (None, "resume", "continue"):
            raise ValueError(f'recover={self.recover!r}: use "resume", "continue" or None')
        if self.max_cost is not None:
            _check_max_cost(self.max_cost)
        if self.max_recoveries < 0:
            raise ValueError(f"max_recoveries={self.max_recoveries}: use 0 or more")
        if self.transport not in ("http", "websocket"):
            raise ValueError(f'transport={self.transport!r}: use "http" or "websocket"')
        if self.transport == "websocket" and self.recover == "resume":
            # and "continue" (a prefill) is off for every Responses model, the only
            # ones a WebSocket carries: no recovery is left to advise
            raise UsageError(
                'recover="resume" reads the cut response again over HTTP, and Responses '
                'models take no other recovery; with transport="websocket" leave recover '
                "at None (a cut ends the stream in an Error)"
            )

    if TYPE_CHECKING:
        # What type checkers see: the fields above, except that ``thinking`` also
        # takes the plain strings (stored as `ThinkingLevel` by __post_init__).
        # tests/core/test_options_typing.py keeps this in step with the fields.
        def __init__(
            self,
            *,
            temperature: float | None = None,
            top_p: float | None = None,
            top_k: int | None = None,
            max_tokens: int | None = None,
            stop: list[str] | None = None,
            seed: int | None = None,
            tool_choice: str | None = None,
            thinking: ThinkingLevel | ThinkingName | None = None,
            thinking_budget: int | None = None,
            thinking_display: Literal["summarized", "omitted"] | None = None,
            n: int | None = None,
            text_tool_calls: list[str] | None = None,
            response_schema: dict[str, Any] | type[Any] | None = None,
            cache: Literal["off", "auto"] | list[CachePoint] | None = None,
            cache_key: str | None = None,
            api_key: str | None = None,
            aws_credentials: AWSCredentials | None = None,
            base_url: str | None = None,
            headers: dict[str, str] | None = None,
            extra_body: dict[str, Any] | None = None,
            max_line_bytes: int = 1 << 20,
            max_event_bytes: int = 16 << 20,
            max_error_body_bytes: int = 1 << 20,
            max_cost: float | None = None,
            max_response_bytes: int = 256 << 20,
            max_content_bytes: int = 64 << 20,
            connect_timeout: float = 10.0,
            first_byte_timeout: float = 600.0,
            idle_timeout: float = 120.0,
            total_timeout: float | None = None,
            max_attempts: int = 3,
            retry_base_delay: float = 0.5,
            retry_max_delay: float = 30.0,
            pause_turn_continuations: int = 5,
            repair_tool_call: ToolCallRepair | None = None,
            recover: RecoverMode | None = None,
            max_recoveries: int = 2,
            transport: Transport = "http",
        ) -> None: ...

    def __repr__(self) -> str:
        return redacted_repr(
            self,
            secret=frozenset({"api_key", "aws_credentials"}),
            keys_only=frozenset({"headers", "extra_body"}),
        )


def _check_max_cost(value: object) -> None:
    """Refuse a spending cap that is no finite, non-negative number of dollars."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < math.inf:
        raise ValueError(
            f"max_cost={value!r}: use a number of US dollars (0 or more), or None for no cap"
        )


#: What a client of a server that holds the credentials may choose: what to
#: generate. Everything else (credentials, base URL, headers, extra body keys,
#: attempts, timeouts, caps) decides where a request goes, how often it is sent
#: or what it may cost, and comes from the server's configuration only.
CLIENT_FIELDS: Final = (
    "temperature",
    "top_p",
    "top_k",
    "max_tokens",
    "stop",
    "seed",
    "tool_choice",
    "thinking",
    "thinking_budget",
    "thinking_display",  # how much of the thinking comes back; costs nothing extra
    # a schema shapes the answer and costs nothing extra; it is JSON data, and only
    # local $refs are ever resolved (nothing is fetched)
    "response_schema",
    # "off"/"auto" only (the gateway refuses explicit breakpoints: a 1-hour TTL bills
    # cache writes at twice the input price, the operator's money)
    "cache",
)


def client_fields(options: Options) -> dict[str, Any]:
    """The generation knobs ``options`` sets (`CLIENT_FIELDS` that are not None)."""
    out: dict[str, Any] = {}
    for name in CLIENT_FIELDS:
        value = getattr(options, name)
        if value is None:
            continue
        if name == "response_schema":
            from .json._schema import json_schema_of  # a type travels as its JSON Schema

            value = json_schema_of(value)
        elif name == "cache" and not isinstance(value, str):
            continue  # explicit breakpoints are the server's decision, never a client's
        out[name] = value
    return out
