"""Where a request goes and what a failed connection says, shared by the exchange,
the tunnel and the driver.

Pure: parsing a URL into a `Target`, and naming connect and TLS failures (the
shell catches the exception; this module turns it into an `Error` that says
what to check). ``ssl`` is imported for its exception classes only.
"""

from __future__ import annotations

import os
import socket
import ssl
from functools import lru_cache
from typing import Final, NamedTuple
from urllib.parse import urlsplit

from .._events import Error
from .._redact import redact_url

__all__ = [
    "MAX_HEADER_BYTES",
    "USER_AGENT",
    "Target",
    "connect_error",
    "connect_timeout_error",
    "parse_target",
    "seconds_text",
]

#: Cap on a response head (status line + headers); a server dripping headers
#: forever (slow loris) hits the first-byte timer, one sending megabytes hits this.
MAX_HEADER_BYTES: Final = 64 << 10
USER_AGENT: Final = "streamfn/0.1"


def seconds_text(value: float) -> str:
    """A duration as the timeout messages print it."""
    return f"{float(value)} s"


class Target(NamedTuple):
    """Where a request goes: ``origin`` is the pool key, ``target`` the request-target."""

    scheme: str
    host: str
    port: int
    target: str

    @property
    def authority(self) -> str:
        default = 443 if self.scheme == "https" else 80
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if self.port == default else f"{host}:{self.port}"

    @property
    def origin(self) -> tuple[str, str, int]:
        return (self.scheme, self.host, self.port)


@lru_cache(maxsize=64)
def parse_target(url: str) -> Target:
    """Split an ``http(s)://`` URL; raises ValueError (URL redacted) for anything else.

    Remembered for the last few URLs: every attempt of every stream splits
    its URL (``urlsplit`` is most of the cost), and they repeat.
    """
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"not an http(s) URL: {redact_url(url)!r}")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise ValueError(f"invalid port in {redact_url(url)!r}") from None
    target = parts.path or "/"
    if parts.query:
        target += "?" + parts.query
    return Target(parts.scheme, parts.hostname, port, target)


def connect_error(target: Target, exc: BaseException) -> Error:
    """A failed TCP connect or TLS handshake, named so the caller can act on it.

    Said once, the same in every shell: the OS's reason for an errno, not each
    event loop's own sentence around it (which repeated the address). A name
    the resolver does not know says so, and what to check.
    """
    tls = _cause(exc, (ssl.SSLError, ssl.CertificateError))
    if tls is not None:
        detail = str(tls) or type(tls).__name__
        return Error.network(f"TLS handshake with {target.host}:{target.port} failed: {detail}")
    unresolved = _cause(exc, (socket.gaierror,))
    if unresolved is not None:
        return Error.network(
            f"cannot resolve the host name {target.host!r} ({_os_reason(unresolved)}): check "
            "the host in the base URL, and that this machine's DNS and network work "
            "(behind a proxy? set HTTPS_PROXY)"
        )
    return Error.network(f"connect to {target.host}:{target.port} failed: {_os_reason(exc)}")


def _os_reason(exc: BaseException) -> str:
    """``[Errno 111] Connection refused``: the errno and the OS's words for it, without
    the event loop's sentence around them; else the exception's own text."""
    if isinstance(exc, socket.gaierror) and exc.strerror:
        return exc.strerror
    number = exc.errno if isinstance(exc, OSError) else None
    if isinstance(number, int) and number > 0:
        return f"[Errno {number}] {os.strerror(number)}"
    return str(exc) or type(exc).__name__


def connect_timeout_error(target: Target, seconds: float) -> Error:
    """The `Error` (kind ``network``) for a connection to ``target`` not made within
    ``seconds``; every shell reports a connect timeout with it."""
    return Error.network(
        f"connect timeout: no connection to {target.host}:{target.port} within {seconds_text(seconds)}"
    )


def _cause(exc: BaseException, kinds: tuple[type[BaseException], ...]) -> BaseException | None:
    """The exception of ``kinds`` behind ``exc`` (trio wraps a TLS error in
    BrokenResourceError), or None."""
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            return None
        if isinstance(seen, kinds):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None
