"""The fake provider's faults: every way it can answer, one function each.

`FAULTS` names them (the first segment of the request path); `reply` writes
the answer for one of them on the socket, from an `Exchange` (the request's
body, its content type, how often its token was seen ...).
"""

from __future__ import annotations

import email.utils
import functools
import gzip
import json
import socket
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field

from streamfn.core.wire._eventstream import encode_message

from ._fake_bodies import EVENTSTREAM, UNFINISHED, first_unit, oversized_unit, sse
from ._raw_http import chunk, head, reset

__all__ = ["FAULTS", "Exchange", "reply"]

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

_OVERLOADED_FIRST = sse(
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
    "flood-1xx",  # interim (103) responses as fast as the socket takes them, for the stall
    "flood-comments",  # headers, then SSE comments as fast as the socket takes them
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
    # each event in a chunk of its own, a pause between, counted (`Exchange.record`)
    "paced",
)

#: the pause between two of the "paced" fault's events: a provider generating
PACE = 0.002


@dataclass(frozen=True)
class Exchange:
    """What one answer needs: the socket, the body and its type, and the server's state."""

    sock: socket.socket
    provider: str
    body: bytes
    ctype: str
    #: how many requests this token has made, this one included
    hit: int
    #: another caller's answer, for the faults that must not cross answers
    wrong: bytes
    #: the server's root URL (redirects point back at it)
    url: str
    #: how long the stalls last
    stall: float
    #: a sleep the server's close interrupts
    wait: Callable[[float], None]
    #: what the "paced" fault sent, by body name: (events sent, whether the client
    #: closed the connection before the last one)
    record: dict[str, tuple[int, bool]] = field(default_factory=dict)

    @property
    def half(self) -> int:
        return len(self.body) // 2

    def chunked(self, extra: dict[str, str] | None = None) -> bytes:
        return head(200, self.ctype, extra, Transfer_Encoding="chunked")

    def whole(self, data: bytes | None = None) -> bytes:
        data = self.body if data is None else data
        return head(200, self.ctype, Content_Length=str(len(data))) + data


#: a fault's answer: False when the connection must end afterwards
Reply = Callable[[Exchange], bool]


def reply(fault: str, ex: Exchange) -> bool:
    """Write the answer for ``fault``; False when the connection must end afterwards."""
    if fault in ("429-then-ok", "500-then-ok") and ex.hit == 1:
        fault = fault.split("-")[0]
    if fault == "overloaded-then-ok" and ex.hit == 1:
        fault = "overloaded-first"
    if fault == "429-date-then-ok":
        fault = "429-date-soon" if ex.hit == 1 else "ok-length"
    if fault in _ERROR_BODIES:
        return _error(fault, ex)
    answer = _REPLIES.get(fault)
    if answer is None:
        raise ValueError(f"unknown fault {fault!r}")
    return answer(ex)


def _error(fault: str, ex: Exchange) -> bool:
    status, payload = _ERROR_BODIES[fault]
    data = json.dumps(payload).encode()
    extra = {"Retry-After": "0"} if status == 429 else {}
    ex.sock.sendall(head(status, "application/json", extra, Content_Length=str(len(data))))
    ex.sock.sendall(data)
    return True


def _paced(ex: Exchange) -> bool:
    """The body's events one chunk each, `PACE` apart, as a provider generates them,
    counted into ``ex.record``: how far the answer got before the client went away."""
    sent = 0
    body = ex.body
    try:
        ex.sock.sendall(ex.chunked())
        while body:
            unit = first_unit(body, ex.ctype)
            body = body[len(unit) :]
            ex.sock.sendall(chunk(unit))
            sent += 1
            ex.wait(PACE)
        ex.sock.sendall(b"0\r\n\r\n")
    except OSError:  # the client closed the connection (or the server is closing)
        ex.record[ex.provider] = (sent, True)
        return False
    ex.record[ex.provider] = (sent, False)
    return True


def _overloaded_first(ex: Exchange) -> bool:
    ex.sock.sendall(head(200, ex.ctype, Content_Length=str(len(_OVERLOADED_FIRST))))
    ex.sock.sendall(_OVERLOADED_FIRST)
    return True


def _ok(ex: Exchange) -> bool:
    ex.sock.sendall(ex.chunked())
    ex.sock.sendall(chunk(ex.body[: ex.half]) + chunk(ex.body[ex.half :]) + b"0\r\n\r\n")
    return True


def _ok_length(ex: Exchange) -> bool:
    ex.sock.sendall(ex.whole())
    return True


def _ok_close(ex: Exchange) -> bool:
    ex.sock.sendall(head(200, ex.ctype, Connection="close") + ex.body)
    return False


def _drip(ex: Exchange) -> bool:
    ex.sock.sendall(ex.chunked())
    for i in range(len(ex.body)):
        ex.sock.sendall(chunk(ex.body[i : i + 1]))
    ex.sock.sendall(b"0\r\n\r\n")
    return True


def _keepalive_comments(ex: Exchange) -> bool:
    ex.sock.sendall(ex.chunked())
    first, _, rest = ex.body.partition(b"\n\n")
    ex.sock.sendall(chunk(first + b"\n\n"))
    for _ in range(6):  # 0.6 s of silence but for comments, past a 0.3 s idle timer
        ex.wait(0.1)
        ex.sock.sendall(chunk(b": keep-alive\n\n"))
    ex.sock.sendall(chunk(rest) + b"0\r\n\r\n")
    return True


def _stall_first(ex: Exchange) -> bool:
    ex.sock.sendall(ex.chunked())
    ex.wait(ex.stall)
    return False


def _stall_mid(ex: Exchange) -> bool:
    ex.sock.sendall(ex.chunked() + chunk(ex.body[: ex.half]))
    ex.wait(ex.stall)
    return False


def _slow_headers(ex: Exchange) -> bool:
    for byte in ex.chunked() * 100:
        ex.sock.sendall(bytes([byte]))
        ex.wait(0.05)
    return False


def _flood(ex: Exchange, start: bytes, unit: bytes) -> bool:
    """``start``, then ``unit`` over and over for the stall, or until the client leaves:
    bytes that never make an event, faster than a client decodes them."""
    batch = unit * max(1, (64 << 10) // len(unit))
    ends = time.monotonic() + ex.stall
    try:
        ex.sock.sendall(start)
        while time.monotonic() < ends:
            ex.sock.sendall(batch)
    except OSError:  # the client gave up: what the flood is for
        pass
    return False


def _flood_1xx(ex: Exchange) -> bool:
    return _flood(ex, b"", b"HTTP/1.1 103 Early Hints\r\nlink: </a>; rel=preload\r\n\r\n")


def _flood_comments(ex: Exchange) -> bool:
    return _flood(ex, ex.chunked(), chunk(b": " + b"x" * 4000 + b"\n\n"))


def _reset(ex: Exchange) -> bool:
    ex.sock.sendall(ex.chunked() + chunk(ex.body[: ex.half]))
    time.sleep(0.05)
    reset(ex.sock)
    return False


def _truncated(ex: Exchange) -> bool:
    ex.sock.sendall(ex.chunked() + chunk(ex.body[: ex.half]))
    return False


def _no_terminal(ex: Exchange) -> bool:
    ex.sock.sendall(ex.whole(UNFINISHED.get(ex.provider, ex.body[: ex.half])))
    return True


def _close_before_response(ex: Exchange) -> bool:
    return False


def _wrong_ctype(ex: Exchange) -> bool:
    page = b"<html><body>Sign in to continue</body></html>"
    ex.sock.sendall(head(200, "text/html", Content_Length=str(len(page))) + page)
    return True


def _garbage_body(ex: Exchange) -> bool:
    ex.sock.sendall(ex.whole(bytes(range(256)) * 4))
    return True


def _garbage_http(ex: Exchange) -> bool:
    ex.sock.sendall(b"\x00\x01SSH-2.0-OpenSSH_9.6\r\nnot http at all\r\n\r\n")
    return False


def _big(ex: Exchange) -> bool:
    filler = b": " + b"x" * 1022 + b"\n"
    ex.sock.sendall(ex.chunked())
    for _ in range(1024):
        ex.sock.sendall(chunk(filler))
    ex.sock.sendall(chunk(ex.body) + b"0\r\n\r\n")
    return True


def _extra_same_packet(ex: Exchange) -> bool:
    ex.sock.sendall(ex.whole() + ex.whole(ex.wrong))
    return True


def _extra_later(ex: Exchange) -> bool:
    ex.sock.sendall(ex.whole())
    ex.wait(0.05)
    ex.sock.sendall(ex.whole(ex.wrong))
    return True


def _idle_408(ex: Exchange) -> bool:
    ex.sock.sendall(ex.whole())
    ex.wait(0.05)
    ex.sock.sendall(
        b"HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
    )
    return False


def _late_tail(ex: Exchange) -> bool:
    ex.sock.sendall(ex.chunked() + chunk(ex.body))
    ex.wait(0.02)
    ex.sock.sendall(b"0\r\n\r\n")
    return True


def _oversized(ex: Exchange) -> bool:
    ex.sock.sendall(ex.chunked())
    ex.sock.sendall(chunk(first_unit(ex.body, ex.ctype)))
    unit = oversized_unit(ex.ctype, 8 << 20)
    for pos in range(0, len(unit), 256 << 10):
        ex.sock.sendall(chunk(unit[pos : pos + (256 << 10)]))
    ex.sock.sendall(b"0\r\n\r\n")
    return True


def _redirect(ex: Exchange, status: int) -> bool:
    location = f"{ex.url}/ok/{ex.provider}/redirected?key=SECRET-IN-QUERY"
    moved = head(status, "text/plain", {"Location": location}, Content_Length="5")
    ex.sock.sendall(moved + b"moved")
    return True


def _compressed(ex: Exchange, fault: str) -> bool:
    coding, data = _encoded(fault, ex.body, ex.ctype)
    ex.sock.sendall(ex.chunked({"Content-Encoding": coding}))
    half = len(data) // 2
    ex.sock.sendall(chunk(data[:half]) + chunk(data[half:]) + b"0\r\n\r\n")
    return True


def _429_date(ex: Exchange, after: float) -> bool:
    """A 429 whose Retry-After is an HTTP-date ``after`` seconds past its Date."""
    now = time.time()
    later = now + after
    data = json.dumps({"error": {"message": "Rate limit reached"}}).encode()
    extra = {
        "Date": email.utils.formatdate(now, usegmt=True),
        "Retry-After": email.utils.formatdate(later, usegmt=True),
    }
    ex.sock.sendall(head(429, "application/json", extra, Content_Length=str(len(data))))
    ex.sock.sendall(data)
    return True


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


_REPLIES: dict[str, Reply] = {
    "flood-1xx": _flood_1xx,
    "flood-comments": _flood_comments,
    "ok": _ok,
    "paced": _paced,
    "429-then-ok": _ok,
    "500-then-ok": _ok,
    "overloaded-then-ok": _ok,
    "overloaded-first": _overloaded_first,
    "ok-length": _ok_length,
    "ok-close": _ok_close,
    "drip": _drip,
    "keepalive-comments": _keepalive_comments,
    "stall-first": _stall_first,
    "stall-mid": _stall_mid,
    "slow-headers": _slow_headers,
    "reset": _reset,
    "truncated": _truncated,
    "no-terminal": _no_terminal,
    "close-before-response": _close_before_response,
    "wrong-ctype": _wrong_ctype,
    "garbage-body": _garbage_body,
    "garbage-http": _garbage_http,
    "big": _big,
    "extra-same-packet": _extra_same_packet,
    "extra-later": _extra_later,
    "idle-408": _idle_408,
    "late-tail": _late_tail,
    "oversized": _oversized,
    **{
        f"redirect-{status}": functools.partial(_redirect, status=status)
        for status in (301, 302, 303, 307, 308)
    },
    **{
        coding: functools.partial(_compressed, fault=coding)
        for coding in ("gzip", "deflate", "deflate-raw", "gzip-bomb", "gzip-corrupt", "br")
    },
    "429-date-soon": functools.partial(_429_date, after=1),
    "429-date-far": functools.partial(_429_date, after=3600),
}
