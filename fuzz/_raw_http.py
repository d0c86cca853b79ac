"""Loopback HTTP/1.1 written by hand: a threaded server, its requests, raw responses.

Plain threads and raw bytes rather than an HTTP library, so a fault can break
HTTP itself and the same server answers trio, asyncio and blocking clients.
`ConnectProxy` is the CONNECT proxy the shells' proxy tests go through.
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import struct
import threading
from typing import Self

__all__ = ["ConnectProxy", "Request", "ThreadedServer", "chunk", "head", "read_request", "reset"]


class Request:
    """One request as the fake servers read it: method, path, headers (lower-case), body."""

    def __init__(self, method: str, path: str, headers: dict[str, str], body: bytes) -> None:
        self.method = method
        self.path = path
        self.headers = headers
        self.body = body


class ThreadedServer:
    """Accept loop + one thread per connection; `close` stops and joins everything."""

    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        self._tls = tls
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(1024)
        self.port: int = self._listener.getsockname()[1]
        self.stopping = threading.Event()
        self.connections = 0
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()
        self._threads: list[threading.Thread] = []
        self._acceptor = threading.Thread(target=self._accept_loop, daemon=True)

    def start(self) -> None:
        self._acceptor.start()

    def _accept_loop(self) -> None:
        while not self.stopping.is_set():
            try:
                sock, _ = self._listener.accept()
            except OSError:
                return
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self._lock:
                self.connections += 1
                self._open.add(sock)
            thread = threading.Thread(target=self._serve, args=(sock,), daemon=True)
            with self._lock:
                self._threads = [t for t in self._threads if t.is_alive()]
                self._threads.append(thread)
            thread.start()

    def _serve(self, raw: socket.socket) -> None:
        sock = raw
        try:
            if self._tls is not None:
                sock = self._tls.wrap_socket(raw, server_side=True)
                with self._lock:
                    self._open.add(sock)
            self.handle(sock)
        except (OSError, ssl.SSLError, ValueError):
            pass
        finally:
            with self._lock:
                self._open.discard(sock)
                self._open.discard(raw)
            sock.close()
            raw.close()

    def handle(self, sock: socket.socket) -> None:
        raise NotImplementedError

    @property
    def open_connections(self) -> int:
        """Connections open now: one whose client closed it (or reset it while an answer
        was being written) leaves this count."""
        with self._lock:
            return len(self._open)

    def wait(self, seconds: float) -> None:
        """Sleep that `close` interrupts, so stalls never outlive the test."""
        if self.stopping.wait(seconds):
            raise OSError("server closing")

    def close(self) -> None:
        self.stopping.set()
        with contextlib.suppress(OSError):  # shutdown wakes the blocked accept()
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        with self._lock:
            socks = list(self._open)
        for s in socks:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
        self._acceptor.join(5)
        for t in list(self._threads):
            t.join(5)

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_request(sock: socket.socket, buffer: bytearray) -> Request | None:
    """One HTTP/1.1 request (Content-Length bodies only); None when the client closed."""
    while b"\r\n\r\n" not in buffer:
        data = sock.recv(65536)
        if not data:
            return None
        buffer += data
    head, _, rest = bytes(buffer).partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    method, path, _ = lines[0].split(" ", 2)
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0"))
    body = bytearray(rest)
    while len(body) < length:
        data = sock.recv(65536)
        if not data:
            return None
        body += data
    buffer[:] = body[length:]
    return Request(method, path, headers, bytes(body[:length]))


def chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data) if data else b""


def head(status: int, ctype: str, extra: dict[str, str] | None = None, **framing: str) -> bytes:
    reason = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden"}.get(status, "X")
    lines = [f"HTTP/1.1 {status} {reason}", f"Content-Type: {ctype}"]
    lines += [f"{k}: {v}" for k, v in (extra or {}).items()]
    lines += [f"{k.replace('_', '-')}: {v}" for k, v in framing.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def reset(sock: socket.socket) -> None:
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


class ConnectProxy(ThreadedServer):
    """A tiny HTTP CONNECT proxy: records each CONNECT, then pipes bytes both ways."""

    def __init__(self) -> None:
        super().__init__(None)
        self.connects: list[Request] = []

    def handle(self, sock: socket.socket) -> None:
        request = read_request(sock, bytearray())
        if request is None:
            return
        self.connects.append(request)
        if request.method != "CONNECT":
            sock.sendall(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")
            return
        host, _, port = request.path.rpartition(":")
        upstream = socket.create_connection((host, int(port)))
        with self._lock:
            self._open.add(upstream)
        try:
            sock.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            pump = threading.Thread(target=_pipe, args=(upstream, sock), daemon=True)
            pump.start()
            _pipe(sock, upstream)
            pump.join(5)
        finally:
            with self._lock:
                self._open.discard(upstream)
            upstream.close()


def _pipe(src: socket.socket, dst: socket.socket) -> None:
    try:
        while data := src.recv(65536):
            dst.sendall(data)
    except OSError:
        pass
    with contextlib.suppress(OSError):
        dst.shutdown(socket.SHUT_WR)
