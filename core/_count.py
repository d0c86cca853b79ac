"""Token counting: how many input tokens a request would be billed for, before it is sent.

A count is asked of the provider where it has an endpoint for it (Anthropic's
``count_tokens``, OpenAI's ``responses/input_tokens``, Gemini's ``countTokens``,
Bedrock's ``CountTokens``): the very request `open_call` would send, re-addressed
and trimmed to what the endpoint takes, so the count covers the same system
prompt, tools, images and thinking settings. Each wire format says how in its own
room (a `Counting` record, its `WireFormat`'s ``counting``); this module is
format-neutral.

The count travels as a call like any other, so the shells drive it with their
timeouts, retries, proxies and signing: `open_count` returns a `Call` whose
answer is one `Start` and a `Done` carrying the count as ``usage.input`` (or an
`Error`); `token_count` reads it. A model whose provider has no counting
endpoint raises `TokenCountUnsupported`, unless the caller accepts an estimate
(`estimate_tokens`), which says it is one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any, Final, NamedTuple

import msgspec

from ._completion import raise_for_error
from ._errors import TokenCountUnsupported
from ._events import Cost, Done, Error, Event, Start, StopReason, Usage
from ._messages import (
    AssistantMessage,
    Context,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from ._options import Options
from ._rate_limits import RateLimits
from ._wire_formats import wire_format
from .catalogue._models import Model
from .providers._base import ProviderCall
from .providers._request import HTTPRequest

__all__ = [
    "Counting",
    "TokenCount",
    "TokenCountUnsupported",
    "counting_for",
    "estimate_tokens",
    "open_count",
    "recast",
    "require_counting",
    "text_tokens",
    "token_count",
]

#: a count's answer is a small JSON object; anything larger is not one
MAX_COUNT_ANSWER: Final = 64 * 1024
#: more input tokens than any model takes (the largest windows hold a few million): a
#: count above it is no count, whatever the upstream says
MAX_COUNTED_TOKENS: Final = 1_000_000_000

#: the estimate's rule of thumb: about four characters of English text a token (the
#: figure OpenAI and Google both give), plus a few tokens of framing per message
CHARS_PER_TOKEN: Final = 4
TOKENS_PER_MESSAGE: Final = 4
#: an image or a file, counted as a flat amount: the estimate cannot see its size
TOKENS_PER_ATTACHMENT: Final = 1000


class TokenCount(msgspec.Struct, frozen=True, kw_only=True):
    """How many input tokens a request would be billed for.

    ``input_tokens`` covers the whole prompt: system prompt, messages, tools and
    attachments. ``estimated`` is True when no tokenizer was asked (the provider has
    no counting endpoint and the caller accepted an estimate); ``source`` says what
    counted: the provider's endpoint, the local model's tokenizer, or the estimate's
    rule.
    """

    input_tokens: int
    model: str
    provider: str
    estimated: bool = False
    source: str = ""
    #: the provider's id for the counting request and its rate-limit state after it
    #: (`Start.request_id`, `Start.rate_limits`); None where no provider was asked or
    #: it said nothing
    request_id: str | None = None
    rate_limits: RateLimits | None = None


class Counting(NamedTuple):
    """How one wire format counts tokens: its `WireFormat`'s ``counting``.

    ``applies``: whether this model's provider serves the endpoint (an
    OpenAI-compatible server rarely does). ``request``: the counting request for
    what ``open_call`` would send. ``field``: the answer's member that holds the count.
    ``sign``: the request signed at the moment of sending, where the provider
    signs (Bedrock's SigV4); None where it does not. ``source``: the endpoint's
    name, for `TokenCount.source`.
    """

    applies: Callable[[Model], bool]
    request: Callable[[Model, Context, Options], HTTPRequest]
    field: str
    source: str
    sign: Callable[[HTTPRequest, Model, Options, datetime], HTTPRequest] | None = None


def recast(
    request: HTTPRequest, url: str, body: Callable[[dict[str, Any]], dict[str, Any]]
) -> HTTPRequest:
    """A message request turned into its counting request: the same headers (the
    credential, the API version, the caller's own), a JSON answer asked for, the body
    reshaped by ``body``."""
    whole = msgspec.json.decode(request.body)
    headers = [(k, "application/json" if k.lower() == "accept" else v) for k, v in request.headers]
    return HTTPRequest(
        method="POST", url=url, headers=headers, body=msgspec.json.encode(body(whole))
    )


def counting_for(model: Model) -> Counting | None:
    """The `Counting` of the model's wire format, if it has one that serves this model."""
    counting = wire_format(model.api).counting
    if counting is not None and counting.applies(model):
        return counting
    return None


def require_counting(model: Model) -> Counting:
    """`counting_for`, or `TokenCountUnsupported` naming the providers that count."""
    counting = counting_for(model)
    if counting is None:
        raise TokenCountUnsupported(
            f"{model.provider}:{model.id} has no token counting endpoint (Anthropic, "
            "OpenAI, Gemini, Vertex AI, Bedrock and the local model have one); pass "
            "estimate=True for an estimate, marked as one"
        )
    return counting


class CountCall(ProviderCall):
    """One counting request: a JSON answer in, `Start` and a `Done` whose
    ``usage.input`` is the count out (or an `Error`, like any call)."""

    api = "count"
    content_types = ("application/json",)

    def __init__(
        self, model: Model, context: Context, options: Options, counting: Counting
    ) -> None:
        super().__init__(model, context, options, counting.request(model, context, options))
        self.counting = counting
        self._unsigned = self.request
        self._body = bytearray()

    def sign(self, timestamp: datetime) -> HTTPRequest:
        if self.counting.sign is not None:
            self.request = self.counting.sign(self._unsigned, self.model, self.options, timestamp)
        return self.request

    def _start_event(self) -> Start:
        """Every call's `Start` (the request id and rate limits its answer's headers
        carry: a count is billed against the same limits), named for the model's wire
        format rather than ``count``."""
        return msgspec.structs.replace(super()._start_event(), api=self.model.api)

    def _feed(self, data: bytes) -> None:
        if len(self._body) + len(data) > MAX_COUNT_ANSWER:
            self.fail(Error.limit(f"a token count answer over {MAX_COUNT_ANSWER} bytes"))
            return
        self._body += data

    def _eof(self) -> None:
        answer = msgspec.json.decode(bytes(self._body))
        count = answer[self.counting.field] if isinstance(answer, dict) else None
        if type(count) is not int or not 0 <= count <= MAX_COUNTED_TOKENS:
            raise ValueError(f"the count is not a number of tokens: {str(count)[:40]!r}")
        self.emit.done(StopReason.STOP, Usage(input=count), Cost())


def open_count(model: Model, context: Context, options: Options | None = None) -> CountCall:
    """The sans-I/O call that asks ``model``'s provider how many input tokens ``context``
    is: drive it like any `Call` (``request``, ``receive_response``, ``receive_data``,
    ``receive_eof``), then read the events with `token_count`. Raises
    `TokenCountUnsupported` for a provider without a counting endpoint."""
    return CountCall(model, context, options or Options(), require_counting(model))


def token_count(events: Iterable[Event], model: Model) -> TokenCount:
    """The count a `open_count` call's events carry; a failed call raises `StreamError`."""
    done: Done | None = None
    start: Start | None = None
    for event in events:
        raise_for_error(event)
        if type(event) is Done:
            done = event
        elif type(event) is Start and start is None:
            start = event
    if done is None:
        raise_for_error(Error.protocol("the token count call ended without an answer"))
        raise AssertionError("unreachable")  # pragma: no cover
    counting = counting_for(model)
    return TokenCount(
        input_tokens=done.usage.input,
        model=model.id,
        provider=model.provider,
        source=counting.source if counting is not None else "",
        request_id=start.request_id if start is not None else None,
        rate_limits=start.rate_limits if start is not None else None,
    )


def _text_chars(context: Context) -> tuple[int, int]:
    """Characters of text and the number of attachments in ``context``."""
    chars = len(context.system_prompt or "")
    attachments = 0
    for message in context.messages:
        if isinstance(message, UserMessage | ToolResultMessage):
            parts = message.content
            if isinstance(parts, str):
                chars += len(parts)
                continue
            for part in parts:
                if isinstance(part, TextContent):
                    chars += len(part.text)
                else:  # an image or a document
                    attachments += 1
        elif isinstance(message, AssistantMessage):
            for block in message.content:
                if isinstance(block, TextContent):
                    chars += len(block.text)
                elif isinstance(block, ThinkingContent):
                    chars += len(block.thinking)
                elif isinstance(block, ToolCall):
                    chars += len(block.name) + len(msgspec.json.encode(block.arguments))
    for tool in context.tools or ():
        chars += len(msgspec.json.encode(tool))
    return chars, attachments


def text_tokens(chars: int) -> int:
    """The estimate's tokens for ``chars`` characters of text: `CHARS_PER_TOKEN` a
    token, rounded up (a piece of one character is a token)."""
    return -(-chars // CHARS_PER_TOKEN)


def estimate_tokens(model: Model, context: Context) -> TokenCount:
    """A rough count without a tokenizer: about four characters a token, a few tokens
    a message, a flat amount an image or file. Marked ``estimated=True``: real counts
    differ by tokenizer and language (code and non-English text take more tokens)."""
    chars, attachments = _text_chars(context)
    tokens = (
        text_tokens(chars)
        + TOKENS_PER_MESSAGE * len(context.messages)
        + TOKENS_PER_ATTACHMENT * attachments
    )
    return TokenCount(
        input_tokens=tokens,
        model=model.id,
        provider=model.provider,
        estimated=True,
        source=f"estimate: {CHARS_PER_TOKEN} characters a token",
    )
