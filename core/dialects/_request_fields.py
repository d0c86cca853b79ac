"""What every client dialect's request parser shares: the body, the field checks, the types.

`BadRequest` and `ClientRequest` live here so the dialect parsers
(`inbound_openai`, `inbound_anthropic`) and `inbound` (the native format and
the public entry points) share them without importing each other. Every check
raises `BadRequest` naming the field the client sent, so the server answers a
400 in the client's own error shape.
"""

from __future__ import annotations

from typing import Any, Final, TypeVar

import msgspec

from .._errors import UsageError
from .._messages import Context, DocumentContent, ImageContent, ServerTool, Tool
from .._options import Options
from ..json._json_shape import json_structure, nests_deeper, value_count
from ..json._structured import output_schema

__all__ = [
    "MAX_COUNT",
    "MAX_DEPTH",
    "MAX_JSON_VALUES",
    "MAX_STOP_BYTES",
    "MAX_STOP_SEQUENCES",
    "MAX_TEMPERATURE",
    "MAX_URL_CHARS",
    "SEED_RANGE",
    "BadRequest",
    "ClientRequest",
    "TooLarge",
    "check_fields",
    "check_ranges",
    "chosen_model",
    "client_url",
    "count_json_values",
    "data_url",
    "decode_body",
    "function_tools",
    "image_or_document",
    "integer",
    "media_part",
    "number",
    "optional",
    "refuse_server_tools",
    "require",
    "response_schema",
    "stop_list",
    "stream_flag",
    "typed_context",
]

#: the deepest nesting of objects and arrays a request body may have; the
#: deepest thing clients legitimately send is a tool's JSON Schema
MAX_DEPTH: Final = 64
#: the most JSON values (objects, arrays, strings, numbers, literals, each counted
#: once) a request body may hold: a long conversation holds tens of thousands, and
#: every value costs decoding time and memory whatever field it sits in
MAX_JSON_VALUES: Final = 1_000_000


class BadRequest(UsageError):
    """The client's request is malformed; the message says which field and why."""


class TooLarge(BadRequest):
    """The body holds more than this server parses (a 413, like an oversized body)."""


class ClientRequest(msgspec.Struct, kw_only=True):
    model: str
    context: Context
    options: Options
    stream: bool = False
    include_usage: bool = False
    #: ids the client chose that its answer echoes (AG-UI's ``threadId`` and ``runId``)
    echo: dict[str, str] = msgspec.field(default_factory=dict)


def decode_body(body: bytes) -> dict[str, Any]:
    """The body as a JSON object, or `BadRequest` saying why it is not one.

    Its values are counted on the raw bytes first (a few passes at C speed, no
    Python per value), so a body of millions of tiny values in an ignored field
    is refused before anything is built from it; the nesting is then measured on
    the same bytes."""
    structure = json_structure(body)
    values = value_count(structure)
    if values > MAX_JSON_VALUES:
        raise TooLarge(
            f"request body holds {values} JSON values, more than this server parses "
            f"({MAX_JSON_VALUES})"
        )
    try:
        obj = msgspec.json.decode(body)
    except UnicodeDecodeError:
        raise BadRequest("request body is not valid UTF-8") from None
    except msgspec.DecodeError as exc:
        raise BadRequest(f"request body is not valid JSON: {exc}") from None
    except RecursionError:
        raise BadRequest(f"request body nests deeper than {MAX_DEPTH} levels") from None
    if not isinstance(obj, dict):
        raise BadRequest("request body must be a JSON object")
    if nests_deeper(structure, MAX_DEPTH):
        raise BadRequest(f"request body nests deeper than {MAX_DEPTH} levels")
    return obj


def count_json_values(body: bytes) -> int:
    """How many JSON values ``body`` holds (exact for valid JSON), without decoding it."""
    return value_count(json_structure(body))


def check_fields(
    obj: dict[str, Any],
    honoured: frozenset[str],
    ignored: frozenset[str],
    where: str,
    neutral: dict[str, tuple[Any, ...]] | None = None,
) -> None:
    """A field a dialect does not list is a 400 naming it (never silently dropped).

    ``neutral`` lists fields this server does not implement that clients send
    at their do-nothing value (``frequency_penalty: 0``): those pass.
    """
    for key, value in obj.items():
        if key in honoured or key in ignored:
            continue
        if neutral and key in neutral and (value is None or value in neutral[key]):
            continue
        raise BadRequest(
            f"{where}.{key}: not accepted by this server. A client chooses what to "
            f"generate ({', '.join(sorted(honoured))}); where a request goes, its "
            "credentials, retries and timeouts are the server's configuration"
        )


#: the highest sampling temperature a client may ask for (OpenAI's and Gemini's top)
MAX_TEMPERATURE: Final = 2.0
#: the largest token count (``max_tokens``, a thinking budget) or ``top_k`` a client
#: may send: a signed 32-bit integer, which every provider and the local model hold
MAX_COUNT: Final = 2**31 - 1
#: a seed is a signed 64-bit integer
SEED_RANGE: Final = (-(2**63), 2**63 - 1)
#: the most stop sequences one request may carry, and their total size in UTF-8
#: bytes: every generated token is checked against each of them
MAX_STOP_SEQUENCES: Final = 64
MAX_STOP_BYTES: Final = 8192


def check_ranges(options: Options, where: str, names: dict[str, str]) -> None:
    """Out-of-range generation knobs are 400s, under the name the client used: an
    upstream or the local model would fail on them later, as a 502."""

    def name(field: str) -> str:
        return f"{where}.{names.get(field, field)}"

    _check_count(options.max_tokens, 1, name("max_tokens"))
    _check_count(options.thinking_budget, 0, name("thinking_budget"))
    _check_count(options.top_k, 0, name("top_k"))
    if options.temperature is not None and not 0 <= options.temperature <= MAX_TEMPERATURE:
        raise BadRequest(f"{name('temperature')}: must be a number from 0 to {MAX_TEMPERATURE:g}")
    if options.top_p is not None and not 0 < options.top_p <= 1:
        raise BadRequest(f"{name('top_p')}: must be more than 0 and at most 1")
    if options.seed is not None and not SEED_RANGE[0] <= options.seed <= SEED_RANGE[1]:
        raise BadRequest(
            f"{name('seed')}: must be a signed 64-bit integer ({SEED_RANGE[0]} to {SEED_RANGE[1]})"
        )
    if options.stop is not None:
        _check_stops(options.stop, name("stop"))


def _check_count(value: int | None, least: int, where: str) -> None:
    if value is not None and not least <= value <= MAX_COUNT:
        raise BadRequest(f"{where}: must be an integer from {least} to {MAX_COUNT}, got {value}")


def _check_stops(stops: list[str], where: str) -> None:
    if len(stops) > MAX_STOP_SEQUENCES:
        raise BadRequest(
            f"{where}: at most {MAX_STOP_SEQUENCES} stop sequences per request, got {len(stops)}"
        )
    size = sum(len(stop.encode("utf-8", "surrogatepass")) for stop in stops)
    if size > MAX_STOP_BYTES:
        raise BadRequest(
            f"{where}: stop sequences may hold {MAX_STOP_BYTES} bytes in all, got {size}"
        )


def response_schema(schema: Any, where: str) -> dict[str, Any]:
    """A client's JSON Schema for structured output, checked the way the request
    builders will use it (an object at the root, local ``$ref``s only)."""
    if not isinstance(schema, dict):
        raise BadRequest(f"{where}: must be a JSON Schema object")
    try:
        output_schema(schema)
    except (TypeError, ValueError) as exc:
        raise BadRequest(f"{where}: {exc}") from None
    return schema


def stream_flag(obj: dict[str, Any], where: str) -> bool:
    value = obj.get("stream")
    if value is None:
        return False
    if not isinstance(value, bool):
        raise BadRequest(
            f"{where}.stream: must be true or false, got {msgspec.json.encode(value).decode()}"
        )
    return value


def typed_context(context: Context) -> Context:
    """The context checked against its declared types (a backstop for loose client JSON)."""
    try:
        return msgspec.convert(msgspec.to_builtins(context), Context)
    except (msgspec.ValidationError, TypeError) as exc:
        raise BadRequest(f"request: a field has the wrong type: {exc}") from None


def require(obj: dict[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    if key not in obj:
        raise BadRequest(f"{where}: missing required field {key!r}")
    value = obj[key]
    if not isinstance(value, kind):
        raise BadRequest(f"{where}.{key}: wrong type {type(value).__name__}")
    return value


def optional(obj: dict[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    value = obj.get(key)
    if value is not None and not isinstance(value, kind):
        raise BadRequest(f"{where}.{key}: wrong type {type(value).__name__}")
    return value


def number(obj: dict[str, Any], key: str, where: str) -> float | None:
    value = optional(obj, key, (int, float), where)
    if isinstance(value, bool):
        raise BadRequest(f"{where}.{key}: wrong type bool")
    return None if value is None else float(value)


def integer(obj: dict[str, Any], key: str, where: str) -> int | None:
    value = optional(obj, key, int, where)
    if isinstance(value, bool):
        raise BadRequest(f"{where}.{key}: wrong type bool")
    return value  # type: ignore[no-any-return]


_Part = TypeVar("_Part", ImageContent, DocumentContent)

#: the longest URL a client may pass on to a provider
MAX_URL_CHARS: Final = 8192


def client_url(url: str, where: str) -> str:
    """An ``http(s)`` URL the upstream provider will fetch (never this server)."""
    if not url.startswith(("https://", "http://")) or len(url) > MAX_URL_CHARS:
        raise BadRequest(
            f"{where}: only base64 data or an http(s) URL (up to {MAX_URL_CHARS} characters, "
            "fetched by the upstream provider) is accepted"
        )
    return url


def data_url(url: str, where: str, default_mime: str) -> tuple[str, str]:
    """(mime type, base64 data) of a ``data:`` URL."""
    if not url.startswith("data:") or ";base64," not in url:
        raise BadRequest(f"{where}: expected a base64 data: URL")
    head, data = url[5:].split(";base64,", 1)
    return head or default_mime, data


def media_part(cls: type[_Part], where: str, **fields: Any) -> _Part:
    """An image or document part, its own checks (one source, a MIME type) as 400s."""
    try:
        return cls(**fields)
    except ValueError as exc:
        raise BadRequest(f"{where}: {exc}") from None


def image_or_document(image: bool, where: str, **fields: Any) -> ImageContent | DocumentContent:
    """`media_part` of an image when ``image``, else of a document."""
    if image:
        return media_part(ImageContent, where, **fields)
    return media_part(DocumentContent, where, **fields)


def _data_url_image(url: str, where: str) -> ImageContent:
    if not url.startswith("data:"):
        return media_part(ImageContent, where, url=client_url(url, where))
    mime, data = data_url(url, where, "image/png")
    return media_part(ImageContent, where, data=data, mime_type=mime)


def stop_list(value: Any, where: str) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    raise BadRequest(f"{where}: must be a string or a list of strings")


def refuse_server_tools(request: ClientRequest, allowed: frozenset[str]) -> ClientRequest:
    """``request`` unchanged, or `BadRequest` naming the first server tool the operator
    did not allow: it would run (and be billed) with the server's credentials."""
    for number, tool in enumerate(request.context.tools):
        if isinstance(tool, ServerTool) and tool.type not in allowed:
            raise BadRequest(
                f"tools[{number}]: server tool {tool.type!r} is not enabled on this server "
                "(it runs with the server's credentials and is billed to them); its operator "
                f"can allow it with --allow-server-tools {tool.type}"
            )
    return request


def chosen_model(value: Any, default: str | None, where: str) -> str:
    """The model a front-end request names, else the server's default; a 400 when
    there is neither (front ends often send no model at all)."""
    if value is None:
        if default:
            return default
        raise BadRequest(
            f"{where}: no model given and this server has no default model (send one, or "
            "start the server with --default-model NAME)"
        )
    if not isinstance(value, str) or not value:
        raise BadRequest(f"{where}: must be a model name (a non-empty string)")
    return value


def function_tools(value: Any, where: str, schema_key: str) -> list[Tool]:
    """A list of ``{name, description, <schema_key>}`` function declarations."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise BadRequest(f"{where}: must be a list of tools")
    tools = []
    for i, tool in enumerate(value):
        w = f"{where}[{i}]"
        if not isinstance(tool, dict):
            raise BadRequest(f"{w}: must be an object")
        tools.append(
            Tool(
                name=require(tool, "name", str, w),
                description=optional(tool, "description", str, w) or "",
                parameters=optional(tool, schema_key, dict, w)
                or {"type": "object", "properties": {}},
            )
        )
    return tools
