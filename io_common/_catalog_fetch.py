"""One HTTP GET of a model catalogue, bounded in size, in time and in where it may lead.

``streamfn models --refresh`` fetches from models.dev or from a mirror the user
names (``STREAMFN_MODELS_URL``, ``--url``). That URL is fetched whatever its
address: a mirror on this machine or on the intranet is a normal setup. A
redirect is followed only

- within the origin the user named (the same scheme, host and port), or
- to a public address, judged by the rule the server applies to its clients'
  input URLs (`streamfn.core.serve._input_urls`): the redirect's text, its host
  name resolved here, then the address the connection actually reached (a DNS
  answer that changes in between cannot lead inside); and never from ``https``
  down to ``http``,

so a public mirror (or whoever answers in its name) cannot turn the fetch to
loopback, the intranet or a cloud metadata service. The body is refused past
``max_bytes`` (the ``Content-Length`` first, then the bytes as they arrive);
each read waits at most `READ_TIMEOUT`, and the whole fetch ends at its
deadline: a watchdog shuts the connection's socket then, so a server that drips
a byte at a time (which no per-read timeout notices) cannot hold it longer.
"""

from __future__ import annotations

import contextlib
import http.client
import ipaddress
import re
import socket
import ssl
import threading
import urllib.error
import urllib.request
from collections.abc import Callable
from email.message import Message
from typing import IO, Any, Final
from urllib.parse import urlsplit

from streamfn.core import CatalogError
from streamfn.core.serve import url_problem
from streamfn.core.serve._input_urls import (
    FILE_HOSTS,
    host_to_resolve,
    public_address,
    resolved_problem,
)
from streamfn.core.serve._log_text import loggable

from ._resolver import Resolver, system_resolver

__all__ = ["READ_TIMEOUT", "fetch", "redirect_problem", "shown_url"]

#: the longest one read (or the connection) may wait for the server
READ_TIMEOUT: Final = 30.0
_CHUNK: Final = 256 * 1024
#: a Content-Length as RFC 9110 writes it: digits only (no sign, no list, no spaces)
_LENGTH: Final = re.compile(r"[0-9]{1,18}")


def shown_url(url: str) -> str:
    """``url`` as errors and the catalogue's version show it: without user info, and
    its query (where a mirror's token would travel) reduced to ``?***``."""
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    query = "?***" if parts.query else ""
    return f"{parts.scheme}://{host}{parts.path}{query}"


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    default = {"http": 80, "https": 443}.get(parts.scheme)
    try:
        port = parts.port or default
    except ValueError:
        port = -1  # a bad port: no origin matches it
    return parts.scheme, (parts.hostname or "").rstrip("."), port


def redirect_problem(configured: str, target: str, resolver: Resolver) -> str | None:
    """Why the fetch of ``configured`` may not follow a redirect to ``target``, or None."""
    scheme = urlsplit(target).scheme
    if scheme not in ("http", "https"):
        return "only http and https redirects are followed"
    if urlsplit(configured).scheme == "https" and scheme == "http":
        return "a redirect from https to http is not followed"
    if _origin(target) == _origin(configured):
        return None
    host = (urlsplit(target).hostname or "").rstrip(".")
    if host in FILE_HOSTS:  # the server's rule keeps clients off them; a mirror may be there
        name: str | None = host
    else:
        if problem := url_problem(target):
            return problem
        name = host_to_resolve(target)
    return None if name is None else resolved_problem(name, resolver(name))


class _Watchdog:
    """The sockets one fetch opened, shut when its deadline passes."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self.expired = False

    def opened(self, sock: socket.socket) -> socket.socket:
        with self._lock:
            self._sockets.append(sock)
            expired = self.expired
        if expired:
            _shut(sock)
        return sock

    def expire(self) -> None:
        with self._lock:
            self.expired = True
            sockets = list(self._sockets)
        for sock in sockets:
            _shut(sock)


def _shut(sock: socket.socket) -> None:
    """End every blocked read on ``sock`` (they see the end of the stream)."""
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


class _Connections:
    """How one fetch connects: each TCP socket goes to the deadline's watchdog (the raw
    socket, under TLS too, so shutting it ends a TLS read as well), and a connection
    for a redirect outside the configured origin must reach a public address. That is
    the address actually connected to, so a DNS answer that changed since the redirect
    was judged cannot lead inside. Through a proxy the proxy connects, so only the
    redirect's text and resolved name are judged."""

    def __init__(self, watchdog: _Watchdog, configured: str) -> None:
        self._watchdog = watchdog
        self._configured = configured

    def factory(
        self, kind: type[http.client.HTTPConnection], req: urllib.request.Request
    ) -> Callable[..., http.client.HTTPConnection]:
        """``kind``'s constructor for ``req``'s connection, its sockets watched."""
        watchdog = self._watchdog
        public_only = not req.has_proxy() and _origin(req.full_url) != _origin(self._configured)
        url = req.full_url

        def connection(*args: Any, **kwargs: Any) -> http.client.HTTPConnection:
            made = kind(*args, **kwargs)
            create: Callable[..., socket.socket] = made._create_connection  # type: ignore[attr-defined]

            def create_watched(*a: Any, **k: Any) -> socket.socket:
                sock = watchdog.opened(create(*a, **k))
                if public_only:
                    _require_public(sock, url)
                return sock

            made._create_connection = create_watched  # type: ignore[attr-defined]
            return made

        return connection


def _require_public(sock: socket.socket, url: str) -> None:
    """Close ``sock`` and refuse unless its peer is a public address."""
    peer = str(sock.getpeername()[0])
    address = ipaddress.ip_address(peer.split("%", 1)[0])
    if not public_address(address):
        sock.close()
        raise CatalogError(
            f"the redirect to {shown_url(url)[:200]!r} connected to {address}, which is "
            "not a public address; not followed"
        )


class _HTTPHandler(urllib.request.HTTPHandler):
    def __init__(self, connections: _Connections) -> None:
        super().__init__()
        self._connections = connections

    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(self._connections.factory(http.client.HTTPConnection, req), req)


class _HTTPSHandler(urllib.request.HTTPSHandler):
    def __init__(self, connections: _Connections) -> None:
        self._tls = ssl.create_default_context()
        super().__init__(context=self._tls)
        self._connections = connections

    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        connection = self._connections.factory(http.client.HTTPSConnection, req)
        return self.do_open(connection, req, context=self._tls)


class _RedirectGuard(urllib.request.HTTPRedirectHandler):
    def __init__(self, configured: str, resolver: Resolver) -> None:
        super().__init__()
        self._configured = configured
        self._resolver = resolver

    def redirect_request(
        self,
        req: urllib.request.Request,
        fp: IO[bytes],
        code: int,
        msg: str,
        headers: http.client.HTTPMessage,
        newurl: str,
    ) -> urllib.request.Request | None:
        if problem := redirect_problem(self._configured, newurl, self._resolver):
            fp.close()
            raise CatalogError(
                f"{shown_url(req.full_url)} redirects to {shown_url(newurl)[:200]!r}, "
                f"which is not followed: {problem}"
            )
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def fetch(
    url: str,
    *,
    max_bytes: int,
    deadline: float,
    progress: Callable[[str, int, int], None] | None = None,
    resolver: Resolver = system_resolver,
) -> bytes:
    """The body ``url`` answers with, within ``max_bytes`` and ``deadline`` seconds.

    ``progress(stage, done, total)`` hears each chunk. Raises `CatalogError` for a
    failed, refused, oversized or late fetch, naming the cause.
    """
    watchdog = _Watchdog()
    connections = _Connections(watchdog, url)
    opener = urllib.request.build_opener(
        _HTTPHandler(connections), _HTTPSHandler(connections), _RedirectGuard(url, resolver)
    )
    request = urllib.request.Request(url, headers={"User-Agent": "streamfn", "Accept": "*/*"})
    shown = shown_url(url)
    timer = threading.Timer(deadline, watchdog.expire)
    timer.daemon = True
    timer.start()
    try:
        with opener.open(request, timeout=min(READ_TIMEOUT, deadline)) as response:
            total = _declared_length(shown, response.headers, max_bytes)
            chunks: list[bytes] = []
            done = 0
            while chunk := response.read(_CHUNK):
                done += len(chunk)
                if done > max_bytes:
                    raise CatalogError(f"{shown} sent more than {max_bytes:,} bytes; not used")
                chunks.append(chunk)
                if progress is not None:
                    progress(f"fetching {shown}", done, total)
    except (OSError, http.client.HTTPException) as exc:  # URLError, HTTPError, timeouts
        if watchdog.expired:
            raise _late(shown, deadline) from None
        if isinstance(exc, urllib.error.HTTPError):
            exc.close()  # its body is not read: the connection goes now
        # the mirror writes an HTTP error's reason: escaped, like any text it sends
        reason = loggable(getattr(exc, "reason", None) or exc) or type(exc).__name__
        raise CatalogError(f"cannot fetch {shown}: {reason}") from None
    finally:
        timer.cancel()
    if watchdog.expired:  # the shut socket read as the end of the body
        raise _late(shown, deadline)
    return b"".join(chunks)


def _late(shown: str, deadline: float) -> CatalogError:
    return CatalogError(
        f"fetching {shown} took longer than {deadline:g} s, the deadline for the whole "
        "fetch; not used (`streamfn models --refresh --timeout SECONDS` allows more)"
    )


def _declared_length(shown: str, headers: Message, max_bytes: int) -> int:
    """The body's announced size (0: not announced), refused when malformed or too big."""
    declared = headers.get("Content-Length")
    if declared is None:
        return 0
    if not _LENGTH.fullmatch(declared.strip()):
        raise CatalogError(f"{shown} sent a malformed Content-Length ({declared[:40]!r}); not used")
    total = int(declared)
    if total > max_bytes:
        raise CatalogError(
            f"{shown} announces {total:,} bytes, more than {max_bytes:,} bytes; not used"
        )
    return total
