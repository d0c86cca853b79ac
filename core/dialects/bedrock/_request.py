"""The Bedrock ConverseStream request: Converse JSON, the credentials, SigV4; pure.

Credentials, decided here because the core never reads the environment or
the clock:

- ``options.aws_credentials`` (an `AWSCredentials`) means SigV4:
  `build_request` returns the *unsigned* request and the shell calls
  ``call.sign(datetime.now(UTC))`` right before each send (a signature is
  valid for minutes, so a retry signs again). `sign` is the pure function
  underneath, so tests pin the timestamp.
- otherwise ``options.api_key`` is a Bedrock API key (the
  ``AWS_BEARER_TOKEN_BEDROCK`` kind), sent as ``Authorization: Bearer``; the
  request is complete as built.
- an ``options.api_key`` of the old packed form ``ACCESS:SECRET[:SESSION]``
  still means SigV4 for one release, with a `DeprecationWarning`.

Region: ``model.extra["region"]``, else the one in ``base_url``
(``bedrock-runtime.<region>.amazonaws.com``), else ``us-east-1``.
"""

from __future__ import annotations

import logging
import re
import warnings
from datetime import datetime
from typing import Any, Final

from streamfn.core._errors import UsageError
from streamfn.core._messages import (
    AssistantMessage,
    Context,
    DocumentContent,
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
from streamfn.core._options import AWSCredentials, Options, ThinkingLevel
from streamfn.core.catalogue._capabilities import fit_max_tokens, fit_sampling
from streamfn.core.catalogue._models import Model
from streamfn.core.dialects._claude_thinking import claude_thinking
from streamfn.core.dialects.bedrock._cache_marks import mark_bedrock
from streamfn.core.dialects.bedrock._parts import bedrock_document, bedrock_text_format
from streamfn.core.dialects.bedrock._sigv4 import encode_path_segment, sign_request
from streamfn.core.json._structured import structured_request
from streamfn.core.providers._convert import opaque_object, prepare_messages
from streamfn.core.providers._request import HTTPRequest, bearer, json_request, request_headers

__all__ = [
    "DEFAULT_REGION",
    "EMPTY_RESULT_TEXT",
    "EVENTSTREAM",
    "SERVICE",
    "AWSCredentials",
    "build_request",
    "format_aws_key",
    "parse_aws_key",
    "region_of",
    "sign",
    "sigv4_credentials",
]

log = logging.getLogger("streamfn")

EVENTSTREAM: Final = "application/vnd.amazon.eventstream"
DEFAULT_REGION: Final = "us-east-1"
SERVICE: Final = "bedrock"

_REGION_IN_HOST: Final = re.compile(r"bedrock-runtime(?:-fips)?\.([a-z0-9-]+)\.amazonaws\.com")

# ---------------------------------------------------------------------------
# Credentials and signing
# ---------------------------------------------------------------------------

_PACKED_KEY_DEPRECATED: Final = (
    "AWS keys packed into options.api_key as ACCESS:SECRET[:SESSION] are deprecated; "
    "pass Options(aws_credentials=AWSCredentials(access_key_id=..., secret_access_key=..., "
    "session_token=...)) (the packed form goes away in the next release)"
)


def _is_packed(api_key: str | None) -> bool:
    """AWS keys never contain a colon, Bedrock API keys neither: a colon means packed keys."""
    return api_key is not None and ":" in api_key


def _unpack(api_key: str) -> AWSCredentials:
    parts = api_key.split(":")
    if len(parts) not in (2, 3) or not all(parts):
        raise UsageError("options.api_key for bedrock must be ACCESS_KEY:SECRET_KEY[:SESSION]")
    return AWSCredentials(
        access_key_id=parts[0],
        secret_access_key=parts[1],
        session_token=parts[2] if len(parts) == 3 else None,
    )


def sigv4_credentials(options: Options) -> AWSCredentials | None:
    """The keys to sign with; None when the request carries a Bedrock API key (or nothing)."""
    if options.aws_credentials is not None:
        return options.aws_credentials
    key = options.api_key
    if key is not None and _is_packed(key):
        warnings.warn(_PACKED_KEY_DEPRECATED, DeprecationWarning, stacklevel=3)
        return _unpack(key)
    return None


def format_aws_key(access_key: str, secret_key: str, session_token: str | None = None) -> str:
    """Deprecated: the packed ``options.api_key`` form of AWS keys; use `AWSCredentials`."""
    warnings.warn(_PACKED_KEY_DEPRECATED, DeprecationWarning, stacklevel=2)
    parts = [access_key, secret_key] + ([session_token] if session_token else [])
    if any(":" in p or not p for p in parts):
        raise UsageError("AWS keys must be non-empty and contain no ':'")
    return ":".join(parts)


def parse_aws_key(api_key: str | None) -> AWSCredentials | None:
    """Deprecated: `AWSCredentials` from a packed ``ACCESS:SECRET[:SESSION]`` key."""
    warnings.warn(_PACKED_KEY_DEPRECATED, DeprecationWarning, stacklevel=2)
    return _unpack(api_key) if api_key is not None and _is_packed(api_key) else None


def region_of(model: Model, options: Options | None = None) -> str:
    extra = model.extra or {}
    if extra.get("region"):
        return extra["region"]
    base = (options.base_url if options else None) or model.base_url or ""
    found = _REGION_IN_HOST.search(base)
    return found.group(1) if found else DEFAULT_REGION


def sign(
    request: HTTPRequest, credentials: AWSCredentials, timestamp: datetime, *, region: str
) -> HTTPRequest:
    """The same request with SigV4 headers for ``timestamp`` (aware datetime); pure."""
    headers = sign_request(
        method=request.method,
        url=request.url,
        headers=dict(request.headers),
        body=request.body,
        region=region,
        service=SERVICE,
        access_key=credentials.access_key_id,
        secret_key=credentials.secret_access_key,
        session_token=credentials.session_token,
        timestamp=timestamp,
    )
    return HTTPRequest(
        method=request.method, url=request.url, headers=list(headers.items()), body=request.body
    )


# ---------------------------------------------------------------------------
# Request (Converse JSON)
# ---------------------------------------------------------------------------

_THINKING_BUDGET: Final = {
    ThinkingLevel.MINIMAL: 1024,
    ThinkingLevel.LOW: 2048,
    ThinkingLevel.MEDIUM: 8192,
    ThinkingLevel.HIGH: 16384,
    ThinkingLevel.XHIGH: 32_000,
}
_IMAGE_FORMATS: Final = {
    "image/png": "png",
    "image/jpeg": "jpeg",
    "image/jpg": "jpeg",
    "image/gif": "gif",
    "image/webp": "webp",
}


def _url(model: Model, options: Options) -> str:
    base = (
        options.base_url
        or model.base_url
        or f"https://bedrock-runtime.{region_of(model, options)}.amazonaws.com"
    )
    return f"{base.rstrip('/')}/model/{encode_path_segment(model.id)}/converse-stream"


def _headers(model: Model, options: Options) -> list[tuple[str, str]]:
    # SigV4 keys are signed in later (`sign`); any other key is a Bedrock API key
    sigv4 = options.aws_credentials is not None or _is_packed(options.api_key)
    auth = None if sigv4 else bearer(options.api_key)
    return request_headers(model, options, accept=EVENTSTREAM, auth=auth)


def _image(image: ImageContent) -> dict[str, Any]:
    fmt = _IMAGE_FORMATS.get(image.mime_type.lower(), image.mime_type.split("/")[-1])
    return {"image": {"format": fmt, "source": {"bytes": image.data}}}


def _user_blocks(content: str | list[UserContent]) -> list[dict[str, Any]]:
    """Converse rejects blank text ("the text field ... is blank"): left out."""
    if isinstance(content, str):
        return [{"text": content}] if content.strip() else []
    blocks: list[dict[str, Any]] = []
    for number, part in enumerate(content):
        if isinstance(part, TextContent):
            if part.text.strip():
                blocks.append({"text": part.text})
        elif isinstance(part, DocumentContent):
            blocks.append(bedrock_document(part, number))
        else:
            blocks.append(_image(part))
    return blocks


def _assistant_blocks(message: AssistantMessage) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, TextContent):
            if block.text.strip():
                blocks.append({"text": block.text})
        elif isinstance(block, ThinkingContent):
            # prepare_messages kept it only when this very model produced it
            if block.redacted and block.signature:
                blocks.append({"reasoningContent": {"redactedContent": block.signature}})
            elif block.thinking:
                text: dict[str, Any] = {"text": block.thinking}
                if block.signature:
                    text["signature"] = block.signature
                blocks.append({"reasoningContent": {"reasoningText": text}})
        elif isinstance(block, ToolCall):
            blocks.append(
                {"toolUse": {"toolUseId": block.id, "name": block.name, "input": block.arguments}}
            )
        elif isinstance(block, OpaqueContent) and (raw := opaque_object(block)) is not None:
            blocks.append(raw)  # re-encoded from the parsed object, never pasted as text
    return blocks


#: the text of a tool result that has none: Converse rejects blank text blocks
EMPTY_RESULT_TEXT: Final = "(no output)"


def _tool_result(message: ToolResultMessage) -> dict[str, Any]:
    content = _user_blocks(message.content) or [{"text": EMPTY_RESULT_TEXT}]
    result: dict[str, Any] = {"toolUseId": message.tool_call_id, "content": content}
    if message.is_error:
        result["status"] = "error"
    return {"toolResult": result}


def _messages(messages: list[Message]) -> list[dict[str, Any]]:
    """Converse wants strictly alternating roles: consecutive turns of one role merge."""
    out: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, UserMessage):
            role, blocks = "user", _user_blocks(message.content)
        elif isinstance(message, AssistantMessage):
            role, blocks = "assistant", _assistant_blocks(message)
        else:
            role, blocks = "user", [_tool_result(message)]
        if not blocks:
            continue
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})
    return out


def _tool_choice(choice: str) -> dict[str, Any] | None:
    if choice == "auto":
        return {"auto": {}}
    if choice == "required":
        return {"any": {}}
    if choice == "none":
        return None
    return {"tool": {"name": choice}}


def _tool_config(model: Model, context: Context, options: Options) -> dict[str, Any]:
    config: dict[str, Any] = {
        "tools": [
            {
                "toolSpec": {
                    "name": t.name,
                    "description": t.description or t.name,
                    "inputSchema": {"json": t.parameters},
                }
            }
            for t in context.function_tools
        ]
    }
    if options.tool_choice:
        choice = _tool_choice(options.tool_choice)
        if choice is None:
            log.debug("%s: Converse has no tool_choice 'none'; left to the model", model.key)
        else:
            config["toolChoice"] = choice
    return config


def build_request(model: Model, context: Context, options: Options) -> HTTPRequest:
    """The ConverseStream request; unsigned when the key is SigV4 (see `sign`)."""
    plan = structured_request(model, context, options)
    context, options = plan.context, plan.options  # emulated: the forced answer tool
    messages = prepare_messages(context, model)
    body: dict[str, Any] = {"messages": _messages(messages)}
    if context.system_prompt:
        body["system"] = [{"text": context.system_prompt}]
    if context.tools:
        body["toolConfig"] = _tool_config(model, context, options)
    inference: dict[str, Any] = {}
    # Claude's own thinking fields ride in additionalModelRequestFields, decided by the
    # model's capabilities (a Claude id nobody listed still thinks; a model that cannot
    # is told in a warning): https://docs.aws.amazon.com/bedrock/latest/userguide/claude-messages-extended-thinking.html
    max_tokens = fit_max_tokens(model, options.max_tokens) if options.max_tokens else None
    thinking = claude_thinking(
        model, context, options, messages, budgets=_THINKING_BUDGET, max_tokens=max_tokens
    )
    if thinking.thinking is not None:
        fields: dict[str, Any] = {"thinking": thinking.thinking}
        if thinking.effort is not None:
            fields["output_config"] = {"effort": thinking.effort}
        body["additionalModelRequestFields"] = fields
        max_tokens = thinking.max_tokens
    if max_tokens is not None:
        inference["maxTokens"] = max_tokens
    wire = ("temperature", "top_p", "top_k", "stop")
    fitted = fit_sampling(model, options, thinking=thinking.thinking is not None, wire=wire)
    for name, field in (
        ("temperature", "temperature"),
        ("top_p", "topP"),
        ("stop", "stopSequences"),
    ):
        if name in fitted:
            inference[field] = list(fitted[name]) if name == "stop" else fitted[name]
    if inference:
        body["inferenceConfig"] = inference
    if "top_k" in fitted:  # Claude's own field, passed through by Converse
        body.setdefault("additionalModelRequestFields", {})["top_k"] = fitted["top_k"]
    if plan.native is not None:
        body["outputConfig"] = {"textFormat": bedrock_text_format(plan.native)}
    mark_bedrock(body, model, options)
    return json_request(_url(model, options), _headers(model, options), body, options)
