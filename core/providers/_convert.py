"""Make a conversation safe to send to a given model, whoever produced it.

Every request builder calls `prepare_messages` first, so the replay rules
live in one place:

- Thinking with a signature is kept only for the provider, wire api and
  model that signed it. Elsewhere readable thinking becomes plain text (the
  reasoning is not lost, but no foreign signature is sent) and redacted
  thinking, which nobody else can read, is dropped.
- Signatures on text and tool calls (Gemini's ``thoughtSignature``) are
  dropped when the target is a different provider.
- `OpaqueContent` (server-side tool blocks) is sent back only to the
  provider that produced it.
- Tool-call ids are rewritten to what the target accepts (Anthropic and
  Bedrock: ``^[a-zA-Z0-9_-]{1,64}$``; Mistral: nine alphanumerics), and the
  same rewrite is applied to the matching tool results.
- A tool call with no result before the next turn gets a synthetic error
  result, instead of a 400 from the provider.
- Assistant turns that ended in an error or were aborted are skipped: their
  last tool call or thinking block may be cut off half-way. Results of their
  tool calls are skipped with them (a result without its call is a 400).
- Images (in user turns and tool results) are dropped for a model with
  ``images=False``; the turn itself is kept, with its text.

`thinking_allowed` is the other half: where the target demands of a replayed
turn something its producer never made (Anthropic with thinking: a tool-use
turn being continued must start with its own signed thinking block), thinking
is switched off for that one request, with a warning, instead of a 400.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Callable, Sequence
from typing import Any, Final

import msgspec

from .._events import StopReason
from .._messages import (
    AssistantContent,
    AssistantMessage,
    Context,
    ImageContent,
    Message,
    OpaqueContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserContent,
    UserMessage,
)
from .._options import Options
from .._wire_formats import wire_format
from ..catalogue._capabilities import capabilities_for, unsupported
from ..catalogue._models import Model
from ..content._documents import check_inputs, data_url

__all__ = [
    "data_url",
    "forced_tool_choice",
    "id_digest",
    "joined_text",
    "normalize_tool_call_id",
    "prepare_messages",
    "thinking_allowed",
    "tool_arguments",
]

log = logging.getLogger("streamfn")

_ALNUM: Final = re.compile(r"[^a-zA-Z0-9]")

MISSING_RESULT_TEXT: Final = "No result was recorded for this tool call."

_JSON: Final = msgspec.json.Encoder()


def tool_arguments(call: ToolCall) -> str:
    """A tool call's arguments as the JSON text of wire formats that carry a string.

    The exact streamed text when it parsed; otherwise the parsed object, so
    the server never receives the invalid JSON it may have produced.
    """
    if call.arguments_json and call.parse_error is None:
        return call.arguments_json
    return _JSON.encode(call.arguments).decode()


def opaque_object(block: OpaqueContent) -> dict[str, Any] | None:
    """The provider block an `OpaqueContent` carries, as one JSON object; None otherwise.

    Builders send this object, never the text itself: pasted verbatim, a
    string such as ``{"type": "text"}], "model": ...`` would close the block
    early and add fields of its own to the request body (an injection when
    the conversation comes from a gateway's untrusted client).
    """
    try:
        value = msgspec.json.decode(block.json)
    except msgspec.DecodeError:
        return None
    if not isinstance(value, dict) or not isinstance(value.get("type", ""), str):
        return None
    return value


def joined_text(content: Sequence[UserContent]) -> str:
    """The text parts as one string, for fields that take no list of parts."""
    return "\n".join(p.text for p in content if isinstance(p, TextContent))


def _without_images(content: list[UserContent], target: Model) -> list[UserContent]:
    if target.images or not any(isinstance(p, ImageContent) for p in content):
        return content
    log.debug("model %s takes no images; dropping them", target.key)
    return [p for p in content if not isinstance(p, ImageContent)]


def id_digest(text: str, length: int) -> str:
    """A short hash of a tool-call id, for a rewritten id that stays unique."""
    return hashlib.sha256(text.encode()).hexdigest()[:length]


def _mistral_id(tool_id: str) -> str:
    cleaned = _ALNUM.sub("", tool_id)
    if len(cleaned) == 9 and cleaned == tool_id:
        return cleaned
    return id_digest(tool_id, 9)


def _identity(tool_id: str) -> str:
    return tool_id or "call_empty"


def _id_rule(target: Model) -> Callable[[str], str]:
    if target.provider == "mistral":
        return _mistral_id
    return wire_format(target.api).tool_call_id or _identity


def normalize_tool_call_id(tool_id: str, target: Model) -> str:
    """The id ``target`` accepts for a tool call first named ``tool_id``."""
    return _id_rule(target)(tool_id)


def _same_source(message: AssistantMessage, target: Model) -> bool:
    return (
        message.provider == target.provider
        and message.api == target.api
        and message.model == target.id
    )


def _convert_assistant(
    message: AssistantMessage, target: Model, ids: dict[str, str]
) -> AssistantMessage:
    same_model = _same_source(message, target)
    same_provider = message.provider == target.provider
    rule = _id_rule(target)
    content: list[AssistantContent] = []
    for block in message.content:
        if isinstance(block, ThinkingContent):
            if same_model:
                content.append(block)
            elif not block.redacted and block.thinking.strip():
                content.append(TextContent(text=block.thinking))
        elif isinstance(block, TextContent):
            if block.signature and not same_provider:
                block = TextContent(text=block.text)
            if block.text:
                content.append(block)
        elif isinstance(block, ToolCall):
            new_id = ids.setdefault(block.id, rule(block.id))
            content.append(
                ToolCall(
                    id=new_id,
                    name=block.name,
                    arguments=block.arguments,
                    arguments_json=block.arguments_json,
                    parse_error=block.parse_error,
                    signature=block.signature if same_provider else None,
                )
            )
        elif isinstance(block, OpaqueContent) and block.provider == target.provider:
            if opaque_object(block) is not None:
                content.append(block)
            else:
                log.warning(
                    "%s: an opaque %s block is not one JSON object; left out of the request",
                    target.key,
                    block.block_type,
                )
    return AssistantMessage(
        content=content,
        api=message.api,
        provider=message.provider,
        model=message.model,
        response_id=message.response_id,
        stop_reason=message.stop_reason,
        usage=message.usage,
        cost=message.cost,
        timestamp=message.timestamp,
    )


def prepare_messages(context: Context, target: Model) -> list[Message]:
    """``context.messages`` made fit for ``target``: tool-call ids rewritten to the ones
    its format accepts (its `WireFormat`'s ``tool_call_id``), thinking and images it
    cannot take left out, missing tool results filled in.

    First, inputs and server tools the target cannot take are refused
    (`UnsupportedInput`, before any request exists), as its format's `WireFormat` says.
    """
    check_inputs(context, target)
    ids: dict[str, str] = {}
    out: list[Message] = []
    pending: dict[str, ToolCall] = {}  # calls of the last assistant turn awaiting results
    skipped: set[str] = set()  # ids of tool calls in skipped (errored/aborted) turns
    for message in context.messages:
        if isinstance(message, AssistantMessage):
            _flush_missing(pending, out)
            if message.stop_reason in (StopReason.ERROR, StopReason.ABORTED):
                skipped.update(b.id for b in message.content if isinstance(b, ToolCall))
                continue
            converted = _convert_assistant(message, target, ids)
            if not converted.content:
                continue
            out.append(converted)
            pending = {b.id: b for b in converted.content if isinstance(b, ToolCall)}
        elif isinstance(message, ToolResultMessage):
            if message.tool_call_id in skipped and message.tool_call_id not in ids:
                log.debug(
                    "dropping the result of tool call %s from a skipped turn", message.tool_call_id
                )
                continue
            result = _convert_result(message, target, ids)
            pending.pop(result.tool_call_id, None)
            out.append(result)
        else:
            _flush_missing(pending, out)
            out.append(_convert_user(message, target))
    _flush_missing(pending, out)
    return out


def _flush_missing(pending: dict[str, ToolCall], out: list[Message]) -> None:
    """An error result for each call of the last assistant turn that got none."""
    for call in pending.values():
        log.warning("tool call %s (%s) has no result; sending an error result", call.id, call.name)
        out.append(
            ToolResultMessage(
                tool_call_id=call.id,
                tool_name=call.name,
                content=[TextContent(text=MISSING_RESULT_TEXT)],
                is_error=True,
            )
        )
    pending.clear()


def _convert_result(
    message: ToolResultMessage, target: Model, ids: dict[str, str]
) -> ToolResultMessage:
    """A tool result under its call's rewritten id, without images the target cannot take."""
    return ToolResultMessage(
        tool_call_id=ids.get(message.tool_call_id) or _id_rule(target)(message.tool_call_id),
        tool_name=message.tool_name,
        content=_without_images(message.content, target),
        is_error=message.is_error,
        timestamp=message.timestamp,
    )


def _convert_user(message: UserMessage, target: Model) -> UserMessage:
    if isinstance(message.content, list):
        content = _without_images(message.content, target)
        if content is not message.content:
            return UserMessage(content=content, timestamp=message.timestamp)
    return message


def forced_tool_choice(context: Context, options: Options) -> bool:
    """Whether the request forces a tool call (``required`` or a tool's name)."""
    return bool(context.function_tools) and options.tool_choice not in (None, "auto", "none")


def _open_tool_turn_lacks_thinking(messages: list[Message]) -> bool:
    """The last assistant turn calls tools, only their results follow it (the turn is
    being continued), and it does not start with a signed thinking block."""
    for message in reversed(messages):
        if isinstance(message, ToolResultMessage):
            continue
        if not isinstance(message, AssistantMessage) or not message.tool_calls:
            return False
        first = message.content[0]
        return not (isinstance(first, ThinkingContent) and first.signature)
    return False


def thinking_allowed(
    model: Model, context: Context, options: Options, messages: list[Message]
) -> bool:
    """Whether thinking may be on for this request; False (with a warning) when the
    model or the replayed conversation rules it out."""
    caps = capabilities_for(model)
    if not caps.thinking:
        unsupported(model, "thinking", "is not supported by this model; not sent")
        return False
    if not caps.forced_tool_with_thinking and forced_tool_choice(context, options):
        unsupported(
            model,
            "thinking",
            f"cannot be combined with tool_choice={options.tool_choice!r}; "
            "thinking is off for this request",
        )
        return False
    if caps.replay_tool_calls == "thinking_block" and _open_tool_turn_lacks_thinking(messages):
        unsupported(
            model,
            "thinking",
            "needs the tool-use turn being continued to start with its own "
            "signed thinking block, and it has none (begun elsewhere or without thinking); "
            "thinking is off for this request",
        )
        return False
    return True
