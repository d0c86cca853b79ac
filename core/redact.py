"""One ``repr`` for the structs that may carry a secret (`Options`, `Model`), and URLs shown without keys.

A key pasted into ``Options.headers``, ``Options.extra_body`` or
``Model.headers`` must not reach a log line or a traceback through
``repr()``; the field names stay visible so a reader still sees what was set.
"""

from __future__ import annotations

from typing import Any

import msgspec

__all__ = ["redact_url", "redacted_repr"]


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
