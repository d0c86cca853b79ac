"""Who may reach `streamfn serve` from where: Host, Origin, Content-Type and CORS rules.

A server on loopback is still reachable from every web page the user opens:
a page can POST to ``http://127.0.0.1:8000`` (a CORS "simple request" needs
no preflight when its body is ``text/plain``), and DNS rebinding lets a
page's own hostname resolve to 127.0.0.1. So JSON routes take only
``application/json`` (which a page cannot send cross-origin without a
preflight this server does not grant), a loopback server answers only to a
loopback ``Host`` (or one the operator allowed), and a request carrying a
browser ``Origin`` the operator did not list is refused. Plain functions on
ASGI header lists, so every rule is tested on its own (and both shells share them).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from typing import Final

__all__ = [
    "LOOPBACK_HOSTS",
    "cors_headers",
    "header",
    "host_allowed",
    "host_name",
    "is_json",
    "is_loopback",
    "preflight_headers",
]

#: the names a loopback server answers to by default
LOOPBACK_HOSTS: Final = ("localhost", "127.0.0.1", "::1")

Headers = Iterable[tuple[bytes, bytes]]


def header(headers: Headers, name: bytes) -> bytes | None:
    """The first value of header ``name`` (lower-case), or None."""
    for key, value in headers:
        if key.lower() == name:
            return value
    return None


def is_loopback(host: str) -> bool:
    """Whether a bind address is this machine only: a loopback IP literal or ``localhost``.

    Any other name is not trusted to be loopback (``127.attacker.example`` is a DNS
    name like any other), so binding it needs a key like any public address.
    """
    host = host.strip("[]").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def host_name(value: bytes) -> str | None:
    """The name in a ``Host`` header, without port or IPv6 brackets; None if malformed."""
    try:
        text = value.decode("ascii").strip().lower()
    except UnicodeDecodeError:
        return None
    if text.startswith("["):
        end = text.find("]")
        if end < 0 or (end + 1 < len(text) and not text[end + 1 :].startswith(":")):
            return None
        return text[1:end]
    name, _, port = text.partition(":")
    if port and not port.isdigit():
        return None
    return name or None


def host_allowed(headers: Headers, allowed: tuple[str, ...] | None) -> bool:
    """``allowed`` None accepts any Host; otherwise the Host must name one of them."""
    if allowed is None:
        return True
    value = header(headers, b"host")
    name = host_name(value) if value is not None else None
    if name is None:
        return False
    return name in allowed or (name.endswith(".localhost") and "localhost" in allowed)


def is_json(headers: Headers) -> bool:
    """``Content-Type: application/json`` (parameters such as charset allowed)."""
    value = header(headers, b"content-type")
    if value is None:
        return False
    return value.split(b";", 1)[0].strip().lower() == b"application/json"


def cors_headers(origin: bytes | None, allowed: tuple[str, ...]) -> list[tuple[bytes, bytes]]:
    """CORS response headers for an allowed ``Origin``; none otherwise (the default)."""
    if origin is None or not allowed:
        return []
    text = origin.decode("latin-1")
    if "*" not in allowed and text not in allowed:
        return []
    return [(b"access-control-allow-origin", origin), (b"vary", b"origin")]


def preflight_headers(headers: Headers, allowed: tuple[str, ...]) -> list[tuple[bytes, bytes]]:
    """The answer to an allowed origin's ``OPTIONS`` preflight (no credentials mode)."""
    base = cors_headers(header(headers, b"origin"), allowed)
    if not base:
        return []
    requested = header(headers, b"access-control-request-headers")
    return [
        *base,
        (b"access-control-allow-methods", b"GET, POST, OPTIONS"),
        (b"access-control-allow-headers", requested or b"authorization, content-type"),
        (b"access-control-max-age", b"600"),
    ]
