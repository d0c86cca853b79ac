"""Flag values checked before any work, so a wrong value is a usage error (exit 2)
that names the flag, never an unexpected error from deep inside a stream."""

from __future__ import annotations

from urllib.parse import urlsplit

from .command import EXIT_USAGE, CommandError

__all__ = ["check_base_url"]


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
