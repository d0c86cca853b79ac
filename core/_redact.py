"""One ``repr`` for the structs that may carry a secret (`Options`, `Model`), URLs shown
without keys, text scrubbed of known secret values, and text cut without leaving part
of one.

A key pasted into ``Options.headers``, ``Options.extra_body`` or
``Model.headers`` must not reach a log line or a traceback through
``repr()``; the field names stay visible so a reader still sees what was set.
An upstream's error text can quote the request it refused (some gateways and
proxies echo ``Authorization``): `scrub` takes the values out before such
text goes further (`secret_values` says which values count, `request_secrets` which a
request holds). Text that is cut (a long error body, a body stopped at its cap) is cut
with `shorten`, after the scrub: a key split by a cut no longer matches its value, so a
cut never leaves part of a word (a key is one): the word it falls in goes whole, and
the secrets nobody here knows (a server's other keys, scrubbed later) are whole or gone.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import parse_qsl, urlsplit

import msgspec

if TYPE_CHECKING:
    from ._options import Options
    from .catalogue._models import Model

__all__ = [
    "MIN_SECRET_CHARS",
    "redact_url",
    "redacted_repr",
    "request_secrets",
    "scrub",
    "secret_values",
    "shorten",
]

#: shorter configured values are not treated as secrets: a header value of ``1``
#: or ``true`` scrubbed out of every message would garble it and hide nothing
MIN_SECRET_CHARS: Final = 8


def redacted_repr(
    obj: msgspec.Struct, *, secret: frozenset[str] = frozenset(), keys_only: frozenset[str]
) -> str:
    """``Type(field=value, ...)`` without fields left at their default; ``secret``
    fields show ``'***'``, ``keys_only`` mappings show their keys with ``'***'`` values."""
    parts = []
    for field in msgspec.structs.fields(type(obj)):
        value: Any = getattr(obj, field.name)
        if field.default is not msgspec.NODEFAULT and value == field.default:
            continue
        if field.default_factory is not msgspec.NODEFAULT and value == field.default_factory():
            continue
        if field.name in secret and value is not None:
            value = "***"
        elif field.name in keys_only and isinstance(value, dict):
            value = dict.fromkeys(value, "***")
        parts.append(f"{field.name}={value!r}")
    return f"{type(obj).__name__}({', '.join(parts)})"


def redact_url(url: str) -> str:
    """Hide ``key=`` query parameters (Gemini accepts the key in the URL)."""
    if "key=" not in url:
        return url
    head, _, query = url.partition("?")
    parts = [
        (p.split("=", 1)[0] + "=***") if p.lower().startswith("key=") else p
        for p in query.split("&")
    ]
    return head + "?" + "&".join(parts)


def secret_values(values: Iterable[str | None]) -> frozenset[str]:
    """The values worth scrubbing: set, at least `MIN_SECRET_CHARS` long, stripped."""
    return frozenset(
        v.strip() for v in values if v is not None and len(v.strip()) >= MIN_SECRET_CHARS
    )


def scrub(text: str, values: Iterable[str], replacement: str = "***") -> str:
    """``text`` with every occurrence of each of ``values`` replaced (longest first, so a
    value that contains another goes whole); empty values are ignored."""
    for value in sorted((v for v in values if v), key=len, reverse=True):
        if value in text:
            text = text.replace(value, replacement)
    return text


def request_secrets(model: Model, options: Options) -> frozenset[str]:
    """The secrets one request carries: its key, its AWS keys, its header values and
    the password and query values of its URL (Gemini's ``?key=``)."""
    parts = urlsplit(options.base_url or model.base_url)
    values: list[str | None] = [options.api_key, parts.password]
    values += [value for _, value in parse_qsl(parts.query)]
    values += (model.headers or {}).values()
    values += (options.headers or {}).values()
    aws = options.aws_credentials
    if aws is not None:
        values += [aws.secret_access_key, aws.session_token]
    return secret_values(values)


def shorten(text: str, limit: int, *, cut: bool = False, marker: str = "…") -> str:
    """``text`` stripped and at most ``limit`` characters of it, then ``marker`` if any
    was left out. A cut never ends inside a word: the word goes whole (part of a key
    matches no scrub). ``cut``: ``text`` is already the start of a longer one (a body
    stopped at its cap), so its last word may be a part and goes the same way."""
    text = text.strip()
    if len(text) <= limit and not cut:
        return text
    if len(text) > limit:
        head, split = text[:limit], not text[limit].isspace()
    else:
        head, split = text, True
    end = len(head)
    while split and end > 0 and not head[end - 1].isspace():
        end -= 1
    return head[:end].rstrip() + marker
