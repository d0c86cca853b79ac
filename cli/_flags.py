"""Flag values checked before any work, so a wrong value is a usage error (exit 2)
that names the flag, never an unexpected error from deep inside a stream."""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable
from typing import Final, NoReturn
from urllib.parse import urlsplit

from ._command import EXIT_USAGE, CommandError

__all__ = [
    "at_least",
    "check_base_url",
    "port",
    "provider_base_urls",
    "same_url",
    "seconds",
    "server_tools",
    "size",
]


#: what a host may be made of: a name (any script) or an IPv4 address, or an IPv6 one
#: in brackets; never a space or a control character
_HOST: Final = re.compile(r"[\w.~%!$&'()*+,;=-]+|\[[0-9A-Fa-f:.]+(%[^\]]+)?\]")

_USERINFO: Final = re.compile(r"//[^/@]*@")

#: the example a usage error gives when the value itself cannot be mended into one
_EXAMPLE_URL: Final = "http://localhost:8000/v1"


def _valid_url(value: str) -> bool:
    """Whether ``value`` is an http(s) URL with a well-formed host and port, and no
    space or control character anywhere (urlsplit would quietly drop a tab)."""
    if _has_blanks(value):
        return False
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - raises ValueError on a port that is not a number
    except ValueError:
        return False
    host = parts.netloc.rpartition("@")[2]
    host = host.rpartition(":")[0] if parts.port is not None or host.endswith(":") else host
    return (
        parts.scheme in ("http", "https")
        and bool(parts.hostname)
        and _HOST.fullmatch(host) is not None
    )


def _has_blanks(value: str) -> bool:
    return not value.isprintable() or any(c.isspace() for c in value)


def check_base_url(flag: str, value: str) -> str:
    """``value`` when it is an http(s) URL with a valid host; else a usage error naming
    ``flag`` whose example is ``value`` mended (``http://`` for its scheme) when that
    makes a valid URL, and a plain example when it does not."""
    if _valid_url(value):
        return value
    rest = value.split("://", 1)[1] if "://" in value else value
    mended = f"http://{rest}"
    example = mended if _valid_url(mended) else _EXAMPLE_URL
    if _has_blanks(value):
        problem = "has a space or a control character in it"
    elif "://" not in value:
        problem = "has no scheme"
    elif urlsplit(value).scheme not in ("http", "https"):
        problem = "is not an http(s) URL"
    else:
        problem = "has no valid host and port"
    return _refuse(
        f"{flag} {_unsigned(value)!r} {problem}; write the scheme and host, "
        f"e.g. {_unsigned(example)}"
    )


def same_url(first: str, second: str) -> bool:
    """Whether two base URLs name the same place: scheme and host in any case, the
    scheme's default port written or not, a trailing ``/`` or not."""
    return _normal_url(first) == _normal_url(second)


def _normal_url(url: str) -> tuple[str, str, str, int | None, str, str]:
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return (url, "", "", None, "", "")
    scheme = parts.scheme.lower()
    if port == {"http": 80, "https": 443}.get(scheme):
        port = None
    user = parts.netloc.rpartition("@")[0]
    host = (parts.hostname or "").lower()
    return (scheme, user, host, port, parts.path.rstrip("/"), parts.query)


def _unsigned(url: str) -> str:
    """``url`` with any ``user:password@`` hidden, to quote it in an error."""
    return _USERINFO.sub("//***@", url)


def _refuse(message: str) -> NoReturn:
    raise CommandError(message, EXIT_USAGE)


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


#: what a size may be written in, as the help texts give the defaults (8 MiB)
_SIZE: Final = re.compile(r"(\d+)\s*(B|KiB|MiB|GiB)?", re.IGNORECASE)
_UNIT: Final = {"": 1, "b": 1, "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30}


def size(minimum: int) -> Callable[[str], int]:
    """A size in bytes of at least ``minimum``: a whole number, or one in KiB, MiB or
    GiB (``8MiB``, ``512 KiB``), as the flags' help gives their defaults."""

    def in_bytes(text: str) -> int:
        found = _SIZE.fullmatch(text.strip())
        if found is None:
            raise argparse.ArgumentTypeError(
                f"{text!r} is not a size: give bytes (8388608) or KiB, MiB, GiB (8MiB)"
            )
        number = int(found[1]) * _UNIT[(found[2] or "").lower()]
        if number < minimum:
            raise argparse.ArgumentTypeError(f"{text} is below {minimum} bytes")
        return number

    return in_bytes


def seconds(*, zero: bool, most: float = math.inf) -> Callable[[str], float]:
    """A duration in seconds: above 0, or (``zero``) 0 or more; at most ``most``."""

    def duration(text: str) -> float:
        try:
            number = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{text!r} is not a number of seconds: write 3600 for an hour, 90 for a "
                "minute and a half"
            ) from None
        if not math.isfinite(number) or number < 0 or (number == 0 and not zero):
            raise argparse.ArgumentTypeError(
                f"{text} is not a duration: seconds {'0 or more' if zero else 'above 0'}"
            )
        if number > most:
            raise argparse.ArgumentTypeError(f"{text} seconds is too long: at most {most:g}")
        return number

    duration.__name__ = "seconds"
    return duration


def server_tools(value: str) -> tuple[str, ...]:
    """``--allow-server-tools``: comma-separated names, each a known server tool type."""
    from streamfn.core.content._server_tools import SERVER_TOOL_TYPES

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
