"""Flag values checked before any work, so a wrong value is a usage error (exit 2)
that names the flag, never an unexpected error from deep inside a stream."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from urllib.parse import urlsplit

from ._command import EXIT_USAGE, CommandError

__all__ = [
    "at_least",
    "check_base_url",
    "port",
    "provider_base_urls",
    "seconds",
    "server_tools",
]


def check_base_url(flag: str, value: str) -> str:
    """``value`` when it is an http(s) URL with a host; else a usage error naming ``flag``."""
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - raises ValueError on a port that is not a number
    except ValueError as exc:
        raise CommandError(f"{flag} {value!r} is not a valid URL ({exc})", EXIT_USAGE) from exc
    if parts.scheme not in ("http", "https") or not parts.hostname:
        example = value if "://" in value else f"http://{value}"
        raise CommandError(
            f"{flag} {value!r} is not an http(s) URL; write the scheme and host, e.g. {example}",
            EXIT_USAGE,
        )
    return value


def port(text: str) -> int:
    """``--port``: 0 (any free port) to 65535."""
    number = int(text)
    if not 0 <= number <= 65535:
        raise argparse.ArgumentTypeError(f"{number} is not a port: 0 (any free one) to 65535")
    return number


def at_least(minimum: int) -> Callable[[str], int]:
    """A whole number of at least ``minimum`` (counts, sizes)."""

    def whole(text: str) -> int:
        number = int(text)
        if number < minimum:
            raise argparse.ArgumentTypeError(f"{number} is below {minimum}")
        return number

    whole.__name__ = "number"  # argparse names the type in "invalid number value"
    return whole


def seconds(*, zero: bool) -> Callable[[str], float]:
    """A duration in seconds: above 0, or (``zero``) 0 or more."""

    def duration(text: str) -> float:
        number = float(text)
        if not math.isfinite(number) or number < 0 or (number == 0 and not zero):
            raise argparse.ArgumentTypeError(
                f"{text} is not a duration: seconds {'0 or more' if zero else 'above 0'}"
            )
        return number

    duration.__name__ = "seconds"
    return duration


def server_tools(value: str) -> tuple[str, ...]:
    """``--allow-server-tools``: comma-separated names, each a known server tool type."""
    from streamfn.core._server_tools import SERVER_TOOL_TYPES

    names = tuple(t.strip() for t in value.split(",") if t.strip())
    for name in names:
        if name not in SERVER_TOOL_TYPES:
            raise CommandError(
                f"--allow-server-tools: unknown type {name!r} "
                f"(known: {', '.join(SERVER_TOOL_TYPES)})",
                EXIT_USAGE,
            )
    return names


def provider_base_urls(items: list[str]) -> dict[str, str]:
    """``serve --base-url PROVIDER=URL`` (repeatable) as {provider: url}."""
    base_urls = {}
    for item in items:
        provider, sep, url = item.partition("=")
        if not sep or not provider:
            raise CommandError(
                f"--base-url {item!r}: expected PROVIDER=URL, e.g. openai=http://127.0.0.1:4000/v1",
                EXIT_USAGE,
            )
        base_urls[provider] = check_base_url(f"--base-url {provider}=", url).rstrip("/")
    return base_urls
