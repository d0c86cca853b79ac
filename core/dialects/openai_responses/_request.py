"""The Responses API request: input items, tools, reasoning and sampling knobs
(see `openai_responses` for the decisions both sides share: ``store: false``,
reasoning items replayed from the ThinkingEnd signature, no item ids)."""

from __future__ import annotations

import logging
from typing import Any

import msgspec

from streamfn.core._messages import (
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
from streamfn.core._options import Options, ThinkingLevel
from streamfn.core.catalogue._capabilities import effort_for_off, fit_effort, fit_sampling, reasons
from streamfn.core.catalogue._models import Model
from streamfn.core.content._server_tools import tool_objects
from streamfn.core.dialects._openai_common import (
    openai_headers,
    prompt_cache_key,
    quirks_for,
    thinking_on,
)
from streamfn.core.dialects.openai_responses._parts import responses_part, responses_text_format
from streamfn.core.json._structured import structured_request
from streamfn.core.providers._base import HTTPRequest, api_root, json_request
from streamfn.core.providers._convert import (
    joined_text,
    opaque_object,
    prepare_messages,
    tool_arguments,
)

__all__ = ["build_request"]

log = logging.getLogger("streamfn")


def _url(model: Model, options: Options) -> str:
    return api_root(options.base_url or model.base_url, "/v1", only_bare=True) + "/responses"


def _input_parts(content: list[UserContent]) -> list[dict[str, Any]]:
    return [
        {"type": "input_text", "text": part.text}
        if isinstance(part, TextContent)
        else responses_part(part, number)
        for number, part in enumerate(content)
    ]


def _user(message: UserMessage) -> dict[str, Any]:
    content = message.content
    if isinstance(content, str):
        return {"role": "user", "content": content}
    return {"role": "user", "content": _input_parts(content)}


def _reasoning_item(block: ThinkingContent) -> dict[str, Any] | None:
    """The reasoning input item carried in a signature, or None if there is none.

    Rebuilt from its documented fields (the Responses API's reasoning input item:
    ``type``, ``encrypted_content``, ``summary`` of ``summary_text`` parts), never
    pasted: a signature is opaque data that may come from an untrusted caller (a
    gateway's client forging an assistant turn), and an ``id`` or any other key
    would reach the upstream with the operator's credentials (a stored item of
    the operator's organisation, a field the API adds later). We send no ids
    (``store: false``); anything else in the signature is dropped.
    """
    if not block.signature:
        return None
    try:
        item = msgspec.json.decode(block.signature)
    except msgspec.DecodeError:
        log.debug("openai-responses: thinking signature is not ours; not replayed")
        return None
    if not isinstance(item, dict) or item.get("type") != "reasoning":
        return None
    encrypted = item.get("encrypted_content")
    if not encrypted or not isinstance(encrypted, str):
        return None  # without it (store: false) the server cannot resolve the item
    summary = item.get("summary")
    parts = summary if isinstance(summary, list) else []
    texts = [
        p.get("text") for p in parts if isinstance(p, dict) and p.get("type") == "summary_text"
    ]
    return {
        "type": "reasoning",
        "encrypted_content": encrypted,
        "summary": [{"type": "summary_text", "text": t} for t in texts if isinstance(t, str)],
    }


def _assistant(message: AssistantMessage) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    texts: list[str] = []

    def flush_text() -> None:
        if texts:
            items.append(
                {
                    "type": "message",
                    "role": "assistant",
                    "status": "completed",
                    "content": [
                        {"type": "output_text", "text": t, "annotations": []} for t in texts
                    ],
                }
            )
            texts.clear()

    for block in message.content:
        if isinstance(block, TextContent):
            texts.append(block.text)
            continue
        flush_text()
        if isinstance(block, ThinkingContent):
            item = _reasoning_item(block)
            if item is not None:
                items.append(item)
        elif isinstance(block, ToolCall):
            items.append(
                {
                    "type": "function_call",
                    "call_id": block.id,
                    "name": block.name,
                    "arguments": tool_arguments(block),
                }
            )
        elif isinstance(block, OpaqueContent) and (raw := opaque_object(block)) is not None:
            items.append(raw)  # re-encoded from the parsed object, never pasted as text
    flush_text()
    return items


def _tool_result(message: ToolResultMessage) -> dict[str, Any]:
    output: str | list[dict[str, Any]]
    if any(isinstance(p, ImageContent) for p in message.content):
        output = _input_parts(message.content)
    else:
        output = joined_text(message.content)
    return {"type": "function_call_output", "call_id": message.tool_call_id, "output": output}


def _input(messages: list[Message]) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, UserMessage):
            items.append(_user(message))
        elif isinstance(message, AssistantMessage):
            items.extend(_assistant(message))
        else:
            items.append(_tool_result(message))
    return items


def _tool_choice(choice: str) -> str | dict[str, Any]:
    if choice in ("auto", "none", "required"):
        return choice
    return {"type": "function", "name": choice}


def build_request(model: Model, context: Context, options: Options) -> HTTPRequest:
    """The HTTP request for one streamed response; pure."""
    plan = structured_request(model, context, options)
    context, options = plan.context, plan.options
    body: dict[str, Any] = {
        "model": model.id,
        "input": _input(prepare_messages(context, model)),
        "stream": True,
        "store": False,
    }
    if context.system_prompt:
        body["instructions"] = context.system_prompt
    if context.tools:
        # `strict` is required by the API's type: omitted, the schema is taken as
        # strict and every optional parameter becomes required.
        body["tools"] = [
            {
                "type": "function",
                "name": t.name,
                "description": t.description,
                "parameters": t.parameters,
                "strict": False,
            }
            for t in context.function_tools
        ]
        body["tools"] += tool_objects(model, context)
        if options.tool_choice:
            body["tool_choice"] = _tool_choice(options.tool_choice)
    if options.max_tokens is not None:
        body["max_output_tokens"] = options.max_tokens
    if reasons(model):
        body["include"] = ["reasoning.encrypted_content"]
        level = options.thinking
        effort: str | None = None
        if level == ThinkingLevel.OFF:
            effort = effort_for_off(model)
        elif level is not None:
            effort = fit_effort(model, str(level))
        if effort is not None:
            body["reasoning"] = {"effort": effort, "summary": "auto"}
    wire = ("temperature", "top_p")
    body.update(fit_sampling(model, options, thinking=thinking_on(model, options), wire=wire))
    if plan.native is not None:
        body["text"] = {"format": responses_text_format(plan.native)}
    quirks = quirks_for(model.provider)
    if quirks.prompt_cache_key and (key := prompt_cache_key(context, options)):
        body["prompt_cache_key"] = key
    headers = openai_headers(model, options, quirks)
    return json_request(_url(model, options), headers, body, options)
