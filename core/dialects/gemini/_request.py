"""The Gemini / Vertex AI request: ``streamGenerateContent`` as JSON, pure.

``POST {base_url}/v1beta/models/{id}:streamGenerateContent?alt=sse`` with
``x-goog-api-key``; for ``Model.provider == "vertex"`` the Vertex AI URL
(project and location from ``Model.extra``) with ``Authorization: Bearer``.
``Model.extra["stream_format"] = "json"`` leaves out ``alt=sse``: the answer
is then one streamed JSON array (see `streamfn.core.wire._json_array`).
The response side is `streamfn.core.dialects.gemini._response`.
"""

from __future__ import annotations

import logging
import re
from typing import Any, Final

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
from streamfn.core.catalogue._capabilities import (
    capabilities_for,
    fit_budget,
    fit_effort,
    fit_sampling,
    unsupported,
)
from streamfn.core.catalogue._models import Model
from streamfn.core.content._server_tools import tool_objects
from streamfn.core.dialects.gemini._parts import gemini_part
from streamfn.core.json._structured import structured_request, without_refs
from streamfn.core.providers._convert import joined_text, opaque_object, prepare_messages
from streamfn.core.providers._request import HTTPRequest, bearer, json_request, request_headers

__all__ = [
    "DUMMY_THOUGHT_SIGNATURE",
    "THINKING_BUDGETS",
    "build_request",
    "gemini_schema",
    "streams_json_array",
]

log = logging.getLogger("streamfn")

#: thinkingBudget per level for Gemini 2.5 (Gemini 3 takes ``thinkingLevel``).
THINKING_BUDGETS: Final = {
    ThinkingLevel.MINIMAL: 512,
    ThinkingLevel.LOW: 2048,
    ThinkingLevel.MEDIUM: 8192,
    ThinkingLevel.HIGH: 24_576,
    ThinkingLevel.XHIGH: 32_768,
}


def streams_json_array(model: Model) -> bool:
    """``Model.extra["stream_format"] == "json"``: the answer is a JSON array, not SSE."""
    return (model.extra or {}).get("stream_format") == "json"


def _url(model: Model, options: Options) -> str:
    query = "" if streams_json_array(model) else "?alt=sse"
    path = f"models/{model.id}:streamGenerateContent{query}"
    base = (options.base_url or model.base_url).rstrip("/")
    if model.provider == "vertex":
        extra = model.extra or {}
        project = extra.get("project")
        if not project:
            raise ValueError(
                f"vertex model {model.id!r} needs Model.extra['project'] (and 'location')"
            )
        location = extra.get("location", "us-central1")
        if not base or "aiplatform.googleapis.com" in base:
            host = "aiplatform.googleapis.com"
            base = f"https://{host if location == 'global' else f'{location}-{host}'}"
        version = "" if re.search(r"/v1(beta1)?$", base) else "/v1"
        return f"{base}{version}/projects/{project}/locations/{location}/publishers/google/{path}"
    version = "" if re.search(r"/v1(beta|alpha)?$", base) else "/v1beta"
    return f"{base}{version}/{path}"


def _headers(model: Model, options: Options) -> list[tuple[str, str]]:
    if model.provider == "vertex":
        auth = bearer(options.api_key)  # an OAuth access token
    else:
        auth = ("x-goog-api-key", options.api_key) if options.api_key else None
    return request_headers(model, options, accept="text/event-stream", auth=auth)


def _user_parts(content: str | list[UserContent]) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"text": content}] if content else []
    parts: list[dict[str, Any]] = []
    for part in content:
        if isinstance(part, TextContent):
            if part.text:
                parts.append({"text": part.text})
        else:
            parts.append(gemini_part(part))
    return parts


def _signed(part: dict[str, Any], signature: str | None) -> dict[str, Any]:
    if signature:
        part["thoughtSignature"] = signature
    return part


#: Google's documented stand-in for a function call whose signature is unknown (a turn
#: begun on another provider): https://ai.google.dev/gemini-api/docs/thought-signatures#faqs
DUMMY_THOUGHT_SIGNATURE: Final = "skip_thought_signature_validator"


def _model_parts(message: AssistantMessage, sign_calls: bool) -> list[Any]:
    """One model turn. ``sign_calls``: the model validates the signature of a
    turn's first function call (Gemini 3), so a turn whose calls carry none gets
    the documented dummy on its first call."""
    if sign_calls and not any(isinstance(b, ToolCall) and b.signature for b in message.content):
        first = next((b for b in message.content if isinstance(b, ToolCall)), None)
        if first is not None:
            log.debug("gemini: replayed function call %s signed with the dummy", first.name)
            signed = msgspec.structs.replace(first, signature=DUMMY_THOUGHT_SIGNATURE)
            message = msgspec.structs.replace(
                message, content=[signed if b is first else b for b in message.content]
            )
    parts: list[Any] = []
    for block in message.content:
        if isinstance(block, TextContent):
            if block.text or block.signature:
                parts.append(_signed({"text": block.text}, block.signature))
        elif isinstance(block, ThinkingContent):
            # Kept by prepare_messages only for the model that produced it.
            if not block.redacted:
                parts.append(_signed({"thought": True, "text": block.thinking}, block.signature))
        elif isinstance(block, ToolCall):
            call = {"functionCall": {"name": block.name, "args": block.arguments}}
            parts.append(_signed(call, block.signature))
        elif isinstance(block, OpaqueContent) and (raw := opaque_object(block)) is not None:
            parts.append(raw)  # re-encoded from the parsed object, never pasted as text
    return parts


def _function_response(message: ToolResultMessage) -> dict[str, Any]:
    text = joined_text(message.content)
    response = {"error": text} if message.is_error else {"output": text}
    return {"functionResponse": {"name": message.tool_name, "response": response}}


def _contents(messages: list[Message], sign_calls: bool) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    results: list[Any] | None = None  # the user turn collecting function responses
    for message in messages:
        if isinstance(message, ToolResultMessage):
            if results is None:
                results = []
                out.append({"role": "user", "parts": results})
            # Responses first, images after them, all in the one user turn.
            images = [p for p in message.content if isinstance(p, ImageContent)]
            results.insert(
                sum(1 for p in results if "functionResponse" in p), _function_response(message)
            )
            results.extend(gemini_part(i) for i in images)
            continue
        results = None
        if isinstance(message, UserMessage):
            parts = _user_parts(message.content)
            if parts:
                out.append({"role": "user", "parts": parts})
        else:
            parts = _model_parts(message, sign_calls)
            if parts:
                out.append({"role": "model", "parts": parts})
    return out


# JSON Schema keywords Gemini's OpenAPI-subset `Schema` accepts.
_SCHEMA_KEYS: Final = frozenset(
    {
        "type",
        "format",
        "title",
        "description",
        "nullable",
        "enum",
        "items",
        "properties",
        "required",
        "minItems",
        "maxItems",
        "minProperties",
        "maxProperties",
        "minLength",
        "maxLength",
        "pattern",
        "minimum",
        "maximum",
        "anyOf",
        "propertyOrdering",
        "default",
        "example",
    }
)


def gemini_schema(schema: Any) -> Any:
    """A JSON Schema rewritten into the subset Gemini's ``parameters`` accept.

    Unsupported keywords (``$schema``, ``additionalProperties``, ``$ref`` ...)
    are dropped, ``const`` becomes a one-value ``enum``, and a type list with
    ``"null"`` becomes ``nullable``, as does a ``null`` enum member (Gemini's
    enums are strings only). Property names are kept whatever they are.
    """
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "properties" and isinstance(value, dict):
            out[key] = {name: gemini_schema(sub) for name, sub in value.items()}
        elif key == "items":
            out[key] = gemini_schema(value)
        elif key == "anyOf" and isinstance(value, list):
            out[key] = [gemini_schema(sub) for sub in value]
        elif key == "const":
            out["enum"] = [value]
        elif key == "enum" and isinstance(value, list):
            # Gemini takes string enums only: null becomes ``nullable``; an enum
            # of other values cannot be said, so it is left out.
            if None in value:
                out["nullable"] = True
            members = [v for v in value if v is not None]
            if members and all(isinstance(v, str) for v in members):
                out["enum"] = members
        elif key == "type" and isinstance(value, list):
            types = [t for t in value if t != "null"]
            if len(types) < len(value):
                out["nullable"] = True
            if len(types) == 1:
                out["type"] = types[0]
            elif types:
                out["anyOf"] = [{"type": t} for t in types]
        elif key in _SCHEMA_KEYS:
            out[key] = value
    return out


def _tool_config(choice: str) -> dict[str, Any]:
    if choice in ("auto", "none"):
        return {"functionCallingConfig": {"mode": choice.upper()}}
    if choice == "required":
        return {"functionCallingConfig": {"mode": "ANY"}}
    return {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": [choice]}}


def _thinking_config(model: Model, options: Options) -> dict[str, Any] | None:
    """``thinkingConfig`` within the model's capabilities: a level on models with
    ``thinkingLevel`` (Gemini 3), a budget in the model's range otherwise; off only
    where the model can switch thinking off."""
    caps = capabilities_for(model)
    level = options.thinking
    if level is None and options.thinking_budget is None:
        return None
    off = level == ThinkingLevel.OFF or options.thinking_budget == 0
    if not caps.thinking:
        if not off:
            unsupported(model, "thinking", "is not supported by this model; not sent")
        return None
    if off:
        if not caps.thinking_off:
            unsupported(model, "thinking", "cannot be switched off on this model; left on")
            return None
        return {"thinkingBudget": 0}
    if options.thinking_budget is not None:
        budget = options.thinking_budget
        if budget > 0:
            budget = fit_budget(model, budget)
        return {"thinkingBudget": budget, "includeThoughts": True}
    assert level is not None
    if caps.efforts is not None:
        # Gemini 3: thinkingLevel (google-genai's ThinkingLevel; the REST API takes the
        # lower-case names). https://ai.google.dev/gemini-api/docs/thinking#thinking-levels
        effort = fit_effort(model, str(level))
        return {"thinkingLevel": effort, "includeThoughts": True} if effort else None
    return {"thinkingBudget": fit_budget(model, THINKING_BUDGETS[level]), "includeThoughts": True}


_CONFIG_FIELDS: Final = {
    "temperature": "temperature",
    "top_p": "topP",
    "top_k": "topK",
    "stop": "stopSequences",
    "seed": "seed",
}


def build_request(model: Model, context: Context, options: Options) -> HTTPRequest:
    """The HTTP request for one streamed generation; pure.

    Thinking: an explicit ``thinking_budget`` is sent as ``thinkingBudget``;
    a level becomes ``thinkingLevel`` on Gemini 3 and a budget on 2.5 (see
    `THINKING_BUDGETS`); thought summaries are always asked for with it.
    """
    plan = structured_request(model, context, options)
    sign_calls = capabilities_for(model).replay_tool_calls == "thought_signature"
    body: dict[str, Any] = {"contents": _contents(prepare_messages(context, model), sign_calls)}
    if context.system_prompt:
        body["systemInstruction"] = {"parts": [{"text": context.system_prompt}]}
    if context.tools:
        declarations = []
        for tool in context.function_tools:
            declaration: dict[str, Any] = {"name": tool.name}
            if tool.description:
                declaration["description"] = tool.description
            if tool.parameters.get("properties"):
                declaration["parameters"] = gemini_schema(tool.parameters)
            declarations.append(declaration)
        body["tools"] = [{"functionDeclarations": declarations}] if declarations else []
        body["tools"] += tool_objects(model, context)
        if options.tool_choice and declarations:
            body["toolConfig"] = _tool_config(options.tool_choice)
    config: dict[str, Any] = {}
    thinking = _thinking_config(model, options)
    thinks = thinking is not None and thinking.get("thinkingBudget") != 0
    for name, value in fit_sampling(model, options, thinking=thinks).items():
        config[_CONFIG_FIELDS[name]] = list(value) if name == "stop" else value
    if options.max_tokens is not None:
        config["maxOutputTokens"] = options.max_tokens
    if thinking is not None:
        config["thinkingConfig"] = thinking
    if plan.native is not None:
        # Gemini 2.5+ takes JSON Schema itself; older models the OpenAPI subset.
        # https://ai.google.dev/gemini-api/docs/structured-output
        config["responseMimeType"] = "application/json"
        if plan.mode == "openapi":
            config["responseSchema"] = gemini_schema(without_refs(plan.native.schema))
        else:
            config["responseJsonSchema"] = plan.native.schema
    if config:
        body["generationConfig"] = config
    return json_request(_url(model, options), _headers(model, options), body, options)
