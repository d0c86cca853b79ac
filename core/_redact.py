"""One ``repr`` for the structs that may carry a secret (`Options`, `Model`), URLs shown
without keys, and text scrubbed of known secret values.

A key pasted into ``Options.headers``, ``Options.extra_body`` or
``Model.headers`` must not reach a log line or a traceback through
``repr()``; the field names stay visible so a reader still sees what was set.
An upstream's error text can quote the request it refused (some gateways and
proxies echo ``Authorization``): `scrub` takes the values out before such
text goes further (`secret_values` says which values count).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

import msgspec

__all__ = ["MIN_SECRET_CHARS", "redact_url", "redacted_repr", "scrub", "secret_values"]

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
