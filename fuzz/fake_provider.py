"""A loopback fake LLM provider with faults on demand: `FakeProvider`.

Point an unchanged program at it by base URL and it answers like a provider
of any wire format, or breaks the way real networks and providers break.
Real sockets on 127.0.0.1 served by plain threads, so the same server works
for the trio and asyncio shells, blocking code and third-party clients (httpx,
the openai SDK) alike, whatever event loop the caller runs. The request path
chooses what happens: ``/<fault>/<provider>/<token>/...`` (`FakeProvider.base_url`),
where ``fault`` is one of `FAULTS`, ``provider`` picks the body (a wire format
of `WIRE_FORMATS`, or any body given to `FakeProvider.register_body` or
`FakeProvider.serve`, such as a `streamfn.fuzz.transcripts` transcript) and
``token`` groups requests for faults with memory ("500 then success").

Responses are written as raw bytes, not through an HTTP library, so a fault
can break HTTP itself (truncated chunked encoding, a reset, garbage). Only the
standard library is needed (no hypothesis): the pytest plugin
(`streamfn.fuzz.pytest_plugin`, the ``fake_provider`` fixture) imports it alone.
"""

from __future__ import annotations

import contextlib
import email.utils
import functools
import gzip
import json
import socket
import ssl
import struct
import threading
import time
import zlib
from collections import defaultdict
from collections.abc import Callable
from typing import Any, Self

from streamfn.core.wire.eventstream import encode_message
from streamfn.core.wire.sse import encode_sse

__all__ = [
    "ANTHROPIC_BODY",
    "FAULTS",
    "OPENAI_BODY",
    "WIRE_FORMATS",
    "ConnectProxy",
    "FakeProvider",
    "oversized_unit",
]


def _sse(data: Any, event: str | None = None) -> bytes:
    payload = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    return encode_sse(payload, event=event or None)


_WORDS = ["Hello", ",", " wor", "ld", " — ", "café", " 🙂", "!"]
#: the text of the response a misbehaving server writes after the real one
WRONG_WORDS = ["ANOTHER", " CALLER'S", " ANSWER"]


def _openai_body(words: list[str] = _WORDS) -> bytes:
    base = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1, "model": "fake"}
    out = [_sse(base | {"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]})]
    out += [
        _sse(base | {"choices": [{"index": 0, "delta": {"content": w}, "finish_reason": None}]})
        for w in words
    ]
    out.append(_sse(base | {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}))
    usage = {"prompt_tokens": 5, "completion_tokens": 8, "total_tokens": 13}
    out.append(_sse(base | {"choices": [], "usage": usage}))
    out.append(_sse("[DONE]"))
    return b"".join(out)


def _anthropic_body(words: list[str] | None = None) -> bytes:
    message: dict[str, Any] = {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": "claude-fake",
        "content": [],
        "stop_reason": None,
        "usage": {"input_tokens": 7, "output_tokens": 1},
    }
    out = [_sse({"type": "message_start", "message": message}, "message_start")]
    out.append(
        _sse(
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
            "content_block_start",
        )
    )
    out.append(_sse({"type": "ping"}, "ping"))
    for w in words or ["Bonjour", " le", " monde", " — ", "東京", "!"]:
        delta = {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "text_delta", "text": w},
        }
        out.append(_sse(delta, "content_block_delta"))
    out.append(_sse({"type": "content_block_stop", "index": 0}, "content_block_stop"))
    out.append(
        _sse(
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": 9},
            },
            "message_delta",
        )
    )
    out.append(_sse({"type": "message_stop"}, "message_stop"))
    return b"".join(out)


def _responses_body(words: list[str] = _WORDS) -> bytes:
    text = "".join(words)
    item = {"id": "msg_1", "type": "message", "role": "assistant", "status": "in_progress"}
    done_item = item | {
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }
    usage = {"input_tokens": 5, "output_tokens": len(words), "total_tokens": 5 + len(words)}
    response: dict[str, Any] = {"id": "resp_fake", "status": "in_progress", "output": [], "usage": None}
    out = [
        _sse({"type": "response.created", "response": response}, "response.created"),
        _sse(
            {
                "type": "response.output_item.added",
                "output_index": 0,
                "item": item | {"content": []},
            },
            "response.output_item.added",
        ),
    ]
    for w in words:
        delta = {
            "type": "response.output_text.delta",
            "item_id": "msg_1",
            "output_index": 0,
            "content_index": 0,
            "delta": w,
        }
        out.append(_sse(delta, "response.output_text.delta"))
    out.append(
        _sse(
            {"type": "response.output_item.done", "output_index": 0, "item": done_item},
            "response.output_item.done",
        )
    )
    completed = response | {"status": "completed", "output": [done_item], "usage": usage}
    out.append(_sse({"type": "response.completed", "response": completed}, "response.completed"))
    return b"".join(out)


def _gemini_body(words: list[str] = _WORDS) -> bytes:
    out = []
    for i, w in enumerate(words):
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": [{"text": w}]}}
        chunk: dict[str, Any] = {"candidates": [candidate], "responseId": "resp_fake"}
        if i == len(words) - 1:
            candidate["finishReason"] = "STOP"
            chunk["usageMetadata"] = {
                "promptTokenCount": 5,
                "candidatesTokenCount": len(words),
                "totalTokenCount": 5 + len(words),
            }
        out.append(_sse(chunk))
    return b"".join(out)


def _ollama_body(words: list[str] = _WORDS) -> bytes:
    base = {"model": "fake", "created_at": "2025-09-01T10:00:00Z"}
    lines = [base | {"message": {"role": "assistant", "content": w}, "done": False} for w in words]
    lines.append(
        base
        | {
            "message": {"role": "assistant", "content": ""},
            "done": True,
            "done_reason": "stop",
            "prompt_eval_count": 5,
            "eval_count": len(words),
        }
    )
    return b"".join(json.dumps(line, ensure_ascii=False).encode() + b"\n" for line in lines)


def _bedrock_frame(event: str, payload: dict[str, Any]) -> bytes:
    headers = {":event-type": event, ":content-type": "application/json", ":message-type": "event"}
    return encode_message(headers, json.dumps(payload).encode())


def _bedrock_body(words: list[str] = _WORDS) -> bytes:
    out = [_bedrock_frame("messageStart", {"role": "assistant"})]
    out += [
        _bedrock_frame("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": w}})
        for w in words
    ]
    out.append(_bedrock_frame("contentBlockStop", {"contentBlockIndex": 0}))
    out.append(_bedrock_frame("messageStop", {"stopReason": "end_turn"}))
    usage = {"inputTokens": 5, "outputTokens": len(words), "totalTokens": 5 + len(words)}
    out.append(_bedrock_frame("metadata", {"usage": usage, "metrics": {"latencyMs": 1}}))
    return b"".join(out)


OPENAI_BODY = _openai_body()
ANTHROPIC_BODY = _anthropic_body()

EVENTSTREAM = "application/vnd.amazon.eventstream"
#: every wire format the shells drive -> (body builder, content type)
WIRE_FORMATS: dict[str, tuple[Callable[[list[str]], bytes], str]] = {
    "openai-chat": (_openai_body, "text/event-stream"),
    "openai-responses": (_responses_body, "text/event-stream"),
    "anthropic": (_anthropic_body, "text/event-stream"),
    "gemini": (_gemini_body, "text/event-stream"),
    "ollama": (_ollama_body, "application/x-ndjson"),
    "bedrock": (_bedrock_body, EVENTSTREAM),
}


def _first_unit(body: bytes, ctype: str) -> bytes:
    """The body's first event, line or frame: a prefix the decoder accepts whole."""
    if ctype == EVENTSTREAM:
        return body[: struct.unpack(">I", body[:4])[0]]
    end = b"\n\n" if ctype == "text/event-stream" else b"\n"
    return body[: body.index(end) + len(end)]


def oversized_unit(ctype: str, size: int) -> bytes:
    """One wire unit (line or frame) of ``size`` bytes: over any small line or event cap."""
    if ctype == EVENTSTREAM:
        headers = {":event-type": "contentBlockDelta", ":message-type": "event"}
        return encode_message(headers, b"x" * size)
    if ctype == "text/event-stream":
        return b"data: " + b"x" * size
    return b'{"message": "' + b"x" * size


#: the body minus its terminal marker: a stream the provider never finished
_UNFINISHED = {
    "openai-chat": OPENAI_BODY.split(
        b'data: {"id":"chatcmpl-fake","object":"chat.completion.chunk","created":1,"model":"fake","choices":[{"index":0,"delta":{},"finish_reason":"stop"'
    )[0],
    "anthropic": ANTHROPIC_BODY.split(b"event: content_block_stop")[0],
}

_ERROR_BODIES = {
    "401": (
        401,
        {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}},
    ),
    "403": (
        403,
        {"error": {"message": "permission denied for this model", "type": "permission_error"}},
    ),
    "400-context": (
        400,
        {
            "error": {
                "message": "This model's maximum context length is 8192 tokens. However, "
                "your messages resulted in 9000 tokens.",
                "type": "invalid_request_error",
                "code": "context_length_exceeded",
            }
        },
    ),
    "429": (429, {"error": {"message": "Rate limit reached", "type": "rate_limit_error"}}),
    "500": (500, {"error": {"message": "The server had an error", "type": "server_error"}}),
    "503": (503, {"error": {"message": "Service Unavailable", "type": "overloaded_error"}}),
    "400-responses-only": (
        400,
        {
            "error": {
                "message": "This model is only supported in v1/responses "
                "and not in v1/chat/completions.",
                "type": "invalid_request_error",
                "param": "model",
                "code": None,
            }
        },
    ),
}

_OVERLOADED_FIRST = _sse(
    {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}, "error"
)

#: every fault the server knows (the path's first segment)
FAULTS = (
    "ok",  # chunked body
    "ok-length",  # Content-Length body
    "ok-close",  # body delimited by closing the connection
    "drip",  # one byte per chunk, one send per byte
    "keepalive-comments",  # SSE comments every few ms between events
    "stall-first",  # headers, then nothing
    "stall-mid",  # half the body, then nothing
    "slow-headers",  # header bytes one at a time, slowly, forever
    "reset",  # half the body, then a TCP reset
    "truncated",  # half the body, then a clean close without the last chunk
    "no-terminal",  # a well-framed body without the provider's terminal event
    "close-before-response",  # reads the request and closes
    "401",
    "403",
    "400-context",
    "429",  # forever, Retry-After: 0
    "429-then-ok",
    "500-then-ok",
    "503",  # forever
    "overloaded-then-ok",  # 200 whose first SSE event is an Anthropic overloaded_error
    "wrong-ctype",  # 200 text/html
    "garbage-body",  # 200 text/event-stream with bytes that are no SSE
    "garbage-http",  # not an HTTP response at all
    "big",  # 1 MiB of SSE comments before the body
    # connections that must not cross answers
    "extra-same-packet",  # a complete response and another one in the same write
    "extra-later",  # a complete response; 50 ms later another one on the idle socket
    "idle-408",  # a complete response; 50 ms later an unsolicited 408 and a close
    "late-tail",  # the terminal chunk of the HTTP body 20 ms after the provider's last event
    "oversized",  # half the body, then 8 MiB in one line/frame (over the caps) on a live socket
    # redirects: never followed
    "redirect-301",
    "redirect-302",
    "redirect-303",
    "redirect-307",
    "redirect-308",
    # compression the client did not ask for
    "gzip",  # Content-Encoding: gzip, two chunks
    "deflate",  # zlib-wrapped deflate
    "deflate-raw",  # raw deflate, as some servers send it
    "gzip-bomb",  # 16 MiB the wire format ignores, in ~20 KiB of gzip
    "gzip-corrupt",  # says gzip, is not
    "br",  # brotli: not decoded
    # Retry-After as an HTTP-date
    "429-date-then-ok",  # Date: T, Retry-After: T + 1 s
    "429-date-far",  # Retry-After an hour after Date
    "responses-only",  # /chat/completions is a 400 naming v1/responses; /responses answers
)


class _Request:
    def __init__(self, method: str, path: str, headers: dict[str, str], body: bytes) -> None:
        self.method = method
        self.path = path
        self.headers = headers
        self.body = body


class _ThreadedServer:
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


def read_request(sock: socket.socket, buffer: bytearray) -> _Request | None:
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
    return _Request(method, path, headers, bytes(body[:length]))


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data) if data else b""


def _head(status: int, ctype: str, extra: dict[str, str] | None = None, **framing: str) -> bytes:
    reason = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden"}.get(status, "X")
    lines = [f"HTTP/1.1 {status} {reason}", f"Content-Type: {ctype}"]
    lines += [f"{k}: {v}" for k, v in (extra or {}).items()]
    lines += [f"{k.replace('_', '-')}: {v}" for k, v in framing.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def _reset(sock: socket.socket) -> None:
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


class FakeProvider(_ThreadedServer):
    """The fake provider. ``requests`` records every request (method, path, headers, body)."""

    def __init__(self, tls: ssl.SSLContext | None = None, stall: float = 5.0) -> None:
        super().__init__(tls)
        self.stall = stall
        self.requests: list[_Request] = []
        self._hits: dict[str, int] = defaultdict(int)
        self._bodies: dict[str, tuple[bytes, str]] = {
            name: (build(_WORDS), ctype) for name, (build, ctype) in WIRE_FORMATS.items()
        }
        self._bodies["anthropic"] = (ANTHROPIC_BODY, "text/event-stream")
        self._wrong = {name: build(WRONG_WORDS) for name, (build, _) in WIRE_FORMATS.items()}
        self.on_request: Callable[[_Request], None] | None = None
        self._served = 0

    @property
    def url(self) -> str:
        scheme = "https" if self._tls is not None else "http"
        host = "localhost" if self._tls is not None else "127.0.0.1"
        return f"{scheme}://{host}:{self.port}"

    def base_url(self, fault: str, provider: str, token: str = "t") -> str:
        return f"{self.url}/{fault}/{provider}/{token}"

    def register_body(self, name: str, body: bytes, ctype: str = "text/event-stream") -> None:
        self._bodies[name] = (body, ctype)

    def serve(
        self,
        body: bytes,
        content_type: str = "text/event-stream",
        *,
        fault: str = "ok",
        token: str | None = None,
    ) -> str:
        """Serve ``body`` (a recording, or a `streamfn.fuzz.Transcript`'s ``body``) with
        ``fault``; returns the base URL to give a model. Each call gets its own token
        unless one is given, so faults with memory start afresh."""
        if fault not in FAULTS:
            raise ValueError(f"unknown fault {fault!r}; faults: {', '.join(FAULTS)}")
        with self._lock:
            self._served += 1
            name = f"served-{self._served}"
        self.register_body(name, body, content_type)
        return self.base_url(fault, name, token or name)

    def body_for(self, provider: str) -> bytes:
        return self._bodies[provider][0]

    def ctype_for(self, provider: str) -> str:
        return self._bodies[provider][1]

    def hits(self, token: str) -> int:
        return self._hits[token]

    def handle(self, sock: socket.socket) -> None:
        buffer = bytearray()
        while not self.stopping.is_set():
            request = read_request(sock, buffer)
            if request is None:
                return
            self.requests.append(request)
            parts = request.path.strip("/").split("/")
            fault, provider, token = ([*parts, "ok", "openai-chat", "t"])[:3]
            if fault == "responses-only":
                chat = request.path.endswith("/chat/completions")
                fault, provider = (
                    ("400-responses-only", provider) if chat else ("ok", "openai-responses")
                )
            with self._lock:
                self._hits[token] += 1
                hit = self._hits[token]
            keep = self.respond(sock, fault, provider, hit)
            if not keep:
                return

    def respond(self, sock: socket.socket, fault: str, provider: str, hit: int) -> bool:
        """Write the response; False when the connection must end afterwards."""
        body, ctype = self._bodies[provider]
        half = len(body) // 2
        handled = self._respond_hygiene(sock, fault, provider, hit, body, ctype)
        if handled is not None:
            return handled
        if fault in ("429-then-ok", "500-then-ok") and hit == 1:
            fault = fault.split("-")[0]
        if fault == "overloaded-then-ok" and hit == 1:
            sock.sendall(_head(200, ctype, Content_Length=str(len(_OVERLOADED_FIRST))))
            sock.sendall(_OVERLOADED_FIRST)
            return True
        if fault in _ERROR_BODIES:
            status, payload = _ERROR_BODIES[fault]
            data = json.dumps(payload).encode()
            extra = {"Retry-After": "0"} if status == 429 else {}
            sock.sendall(_head(status, "application/json", extra, Content_Length=str(len(data))))
            sock.sendall(data)
            return True
        if fault in ("ok", "429-then-ok", "500-then-ok", "overloaded-then-ok"):
            sock.sendall(_head(200, ctype, Transfer_Encoding="chunked"))
            sock.sendall(_chunk(body[:half]) + _chunk(body[half:]) + b"0\r\n\r\n")
            return True
        if fault == "ok-length":
            sock.sendall(_head(200, ctype, Content_Length=str(len(body))) + body)
            return True
        if fault == "ok-close":
            sock.sendall(_head(200, ctype, Connection="close") + body)
            return False
        if fault == "drip":
            sock.sendall(_head(200, ctype, Transfer_Encoding="chunked"))
            for i in range(len(body)):
                sock.sendall(_chunk(body[i : i + 1]))
            sock.sendall(b"0\r\n\r\n")
            return True
        if fault == "keepalive-comments":
            sock.sendall(_head(200, ctype, Transfer_Encoding="chunked"))
            first, _, rest = body.partition(b"\n\n")
            sock.sendall(_chunk(first + b"\n\n"))
            for _ in range(6):  # 0.6 s of silence but for comments, past a 0.3 s idle timer
                self.wait(0.1)
                sock.sendall(_chunk(b": keep-alive\n\n"))
            sock.sendall(_chunk(rest) + b"0\r\n\r\n")
            return True
        if fault == "stall-first":
            sock.sendall(_head(200, ctype, Transfer_Encoding="chunked"))
            self.wait(self.stall)
            return False
        if fault == "stall-mid":
            sock.sendall(_head(200, ctype, Transfer_Encoding="chunked") + _chunk(body[:half]))
            self.wait(self.stall)
            return False
        if fault == "slow-headers":
            for byte in _head(200, ctype, Transfer_Encoding="chunked") * 100:
                sock.sendall(bytes([byte]))
                self.wait(0.05)
            return False
        if fault == "reset":
            sock.sendall(_head(200, ctype, Transfer_Encoding="chunked") + _chunk(body[:half]))
            time.sleep(0.05)
            _reset(sock)
            return False
        if fault == "truncated":
            sock.sendall(_head(200, ctype, Transfer_Encoding="chunked") + _chunk(body[:half]))
            return False
        if fault == "no-terminal":
            cut = _UNFINISHED.get(provider, body[:half])
            sock.sendall(_head(200, ctype, Content_Length=str(len(cut))) + cut)
            return True
        if fault == "close-before-response":
            return False
        if fault == "wrong-ctype":
            page = b"<html><body>Sign in to continue</body></html>"
            sock.sendall(_head(200, "text/html", Content_Length=str(len(page))) + page)
            return True
        if fault == "garbage-body":
            junk = bytes(range(256)) * 4
            sock.sendall(_head(200, ctype, Content_Length=str(len(junk))) + junk)
            return True
        if fault == "garbage-http":
            sock.sendall(b"\x00\x01SSH-2.0-OpenSSH_9.6\r\nnot http at all\r\n\r\n")
            return False
        if fault == "big":
            filler = b": " + b"x" * 1022 + b"\n"
            sock.sendall(_head(200, ctype, Transfer_Encoding="chunked"))
            for _ in range(1024):
                sock.sendall(_chunk(filler))
            sock.sendall(_chunk(body) + b"0\r\n\r\n")
            return True
        raise ValueError(f"unknown fault {fault!r}")

    def _respond_hygiene(
        self, sock: socket.socket, fault: str, provider: str, hit: int, body: bytes, ctype: str
    ) -> bool | None:
        """The faults of pool hygiene, redirects, compression and Retry-After dates;
        None for any other fault."""
        whole = _head(200, ctype, Content_Length=str(len(body))) + body
        if fault == "extra-same-packet":
            wrong = self._wrong.get(provider, body)
            sock.sendall(whole + _head(200, ctype, Content_Length=str(len(wrong))) + wrong)
            return True
        if fault == "extra-later":
            sock.sendall(whole)
            self.wait(0.05)
            wrong = self._wrong.get(provider, body)
            sock.sendall(_head(200, ctype, Content_Length=str(len(wrong))) + wrong)
            return True
        if fault == "idle-408":
            sock.sendall(whole)
            self.wait(0.05)
            timeout = (
                b"HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
            )
            sock.sendall(timeout)
            return False
        if fault == "late-tail":
            sock.sendall(_head(200, ctype, Transfer_Encoding="chunked") + _chunk(body))
            self.wait(0.02)
            sock.sendall(b"0\r\n\r\n")
            return True
        if fault == "oversized":
            sock.sendall(_head(200, ctype, Transfer_Encoding="chunked"))
            sock.sendall(_chunk(_first_unit(body, ctype)))
            unit = oversized_unit(ctype, 8 << 20)
            for pos in range(0, len(unit), 256 << 10):
                sock.sendall(_chunk(unit[pos : pos + (256 << 10)]))
            sock.sendall(b"0\r\n\r\n")
            return True
        if fault.startswith("redirect-"):
            status = int(fault.split("-")[1])
            location = f"{self.url}/ok/{provider}/redirected?key=SECRET-IN-QUERY"
            page = b"moved"
            head = _head(status, "text/plain", {"Location": location}, Content_Length="5")
            sock.sendall(head + page)
            return True
        if fault in ("gzip", "deflate", "deflate-raw", "gzip-bomb", "gzip-corrupt", "br"):
            coding, data = _encoded(fault, body, ctype)
            sock.sendall(
                _head(200, ctype, {"Content-Encoding": coding}, Transfer_Encoding="chunked")
            )
            half = len(data) // 2
            sock.sendall(_chunk(data[:half]) + _chunk(data[half:]) + b"0\r\n\r\n")
            return True
        if fault in ("429-date-then-ok", "429-date-far") and (hit == 1 or fault == "429-date-far"):
            now = time.time()
            later = now + (1 if fault == "429-date-then-ok" else 3600)
            data = json.dumps({"error": {"message": "Rate limit reached"}}).encode()
            extra = {
                "Date": email.utils.formatdate(now, usegmt=True),
                "Retry-After": email.utils.formatdate(later, usegmt=True),
            }
            sock.sendall(_head(429, "application/json", extra, Content_Length=str(len(data))))
            sock.sendall(data)
            return True
        if fault == "429-date-then-ok":
            sock.sendall(whole)
            return True
        return None


def _encoded(fault: str, body: bytes, ctype: str) -> tuple[str, bytes]:
    """(Content-Encoding, encoded body) for a compression fault."""
    if fault == "gzip":
        return "gzip", gzip.compress(body)
    if fault == "deflate":
        return "deflate", zlib.compress(body)
    if fault == "deflate-raw":
        raw = zlib.compressobj(wbits=-zlib.MAX_WBITS)
        return "deflate", raw.compress(body) + raw.flush()
    if fault == "gzip-bomb":
        return "gzip", _bomb(ctype)
    if fault == "gzip-corrupt":
        return "gzip", body
    return "br", body  # not brotli either: the client must refuse before looking


@functools.cache
def _bomb(ctype: str) -> bytes:
    """16 MiB of what the wire format ignores (SSE comments, blank NDJSON lines, AWS
    keep-alive frames) in ~20 KiB of gzip: only a cap on decoded bytes stops it."""
    if ctype == EVENTSTREAM:
        unit = encode_message({":message-type": "keepalive"}, b" " * 1000)
    elif ctype == "text/event-stream":
        unit = b":" + b" " * 1022 + b"\n"
    else:
        unit = b"\n" * 1024
    return gzip.compress(unit * ((16 << 20) // len(unit)), compresslevel=9)


class ConnectProxy(_ThreadedServer):
    """A tiny HTTP CONNECT proxy: records each CONNECT, then pipes bytes both ways."""

    def __init__(self) -> None:
        super().__init__(None)
        self.connects: list[_Request] = []

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
