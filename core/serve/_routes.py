"""Which route a request is, and every check it passes before and after its body is read.

Pure decisions on the method, path, headers and counters the shell hands in:
the Host/Origin/Content-Type rules (`streamfn.core.serve._guard`), the API key
(compared in constant time), the admission limits, the body budget, the
dialect's parser and the model's output cap. Each refusal is an `HTTPError`
the shell sends in the client's own error shape.
"""

from __future__ import annotations

import hmac
import re
from collections.abc import Iterable
from typing import Any, Final

import msgspec

from ..dialects._request_fields import BadRequest, ClientRequest, TooLarge, decode_body
from ._client_inputs import check_client_inputs, check_resolved_hosts
from ._client_keys import unknown_client_key
from ._guard import header, host_allowed, is_json
from ._served import SERVED, Route, Served
from ._status import HTTPError

__all__ = [
    "PARSED_BASE_BYTES",
    "PARSED_BYTES_PER_CONTAINER",
    "PARSED_BYTES_PER_VALUE",
    "PARSE_INLINE_BYTES",
    "PARSING_BYTES_PER_BODY_BYTE",
    "PARSING_BYTES_PER_CONTAINER",
    "PARSING_BYTES_PER_VALUE",
    "UNAUTHORIZED",
    "BodyBudget",
    "Route",
    "admit",
    "authenticate",
    "authenticate_admin",
    "body_too_slow",
    "check_input_hosts",
    "check_key",
    "check_model",
    "disconnected_early",
    "is_admin",
    "models_body",
    "parse_request",
    "parsed_cost",
    "parsing_cost",
    "presented_key",
    "route",
    "route_socket",
    "socket_body",
]

Headers = Iterable[tuple[bytes, bytes]]

#: bodies above this size are parsed on a worker thread, off the event loop
PARSE_INLINE_BYTES: Final = 256 << 10
#: the 401 of a server started with an API key; streamfn's own clients read their
#: token for it from STREAMFN_PROXY_TOKEN (`streamfn.core._credentials`)
UNAUTHORIZED: Final = (
    "invalid or missing API key for this streamfn server (send the token it was started "
    "with; streamfn clients read it from STREAMFN_PROXY_TOKEN)"
)


def route(
    method: str,
    path: str,
    headers: Headers,
    *,
    allowed_hosts: tuple[str, ...] | None,
    cors: bool,
    api_key: str | None,
    client_keys: bool = False,
) -> tuple[Route, Served]:
    """What to do with a request and its route's record, or the `HTTPError` refusing it
    (checked in this order: framing, Host, Origin, path, method, key, Content-Type).
    ``cors``: its Origin is allowed. ``client_keys``: each client presents its own key,
    which the shell looks up (`check_key`); ``api_key`` is not taken then."""
    headers = list(headers)
    _check_framing(headers)
    _check_origin(headers, allowed_hosts, cors)
    served = SERVED.get(path)
    if served is None:
        raise HTTPError(404, "not_found", f"no route for {method} {path}{_why_not(path)}")
    methods = served.methods
    if method == "OPTIONS" and cors:
        return Route.PREFLIGHT, served
    if method not in methods:
        raise HTTPError(
            405,
            "invalid_request",
            f"{path} answers {', '.join(methods)}, not {method}",
            headers=[(b"allow", ", ".join(methods).encode())],
        )
    if served.kind is Route.HEALTH or served.kind is Route.ADMIN:
        return served.kind, served  # the operator's routes check the admin key
    check_key(headers, api_key, client_keys)
    if served.kind is Route.MODELS:
        return Route.MODELS, served
    if not is_json(headers):
        raise HTTPError(
            415, "invalid_request", "request body must be sent with Content-Type: application/json"
        )
    return served.kind, served


def _check_framing(headers: Headers) -> None:
    """A request with both ``Content-Length`` and ``Transfer-Encoding`` is how requests
    are smuggled past a proxy that reads the other one: refused, and the connection
    closed after the answer (RFC 9112 section 6.1), whatever the HTTP server chose."""
    if header(headers, b"content-length") is not None and (
        header(headers, b"transfer-encoding") is not None
    ):
        raise HTTPError(
            400,
            "invalid_request",
            "a request may not carry both Content-Length and Transfer-Encoding",
            headers=[(b"connection", b"close")],
        )


def _check_origin(headers: Headers, allowed_hosts: tuple[str, ...] | None, cors: bool) -> None:
    if not host_allowed(headers, allowed_hosts):
        raise HTTPError(
            400,
            "invalid_request",
            "this server answers only to a loopback Host (start it with --allowed-host "
            "NAME to accept another name)",
        )
    if header(headers, b"origin") is not None and not cors:
        raise HTTPError(
            403,
            "forbidden",
            "requests from web pages are refused (start the server with --cors-origin "
            "ORIGIN to allow one)",
        )


def route_socket(
    path: str,
    headers: Headers,
    *,
    allowed_hosts: tuple[str, ...] | None,
    api_key: str | None,
    client_keys: bool = False,
) -> Served:
    """The route of a WebSocket handshake, or the `HTTPError` refusing it: the same
    Host rule and key as HTTP, and no web page's Origin at all (a page could open a
    socket with the user's network position; CORS does not cover WebSockets)."""
    headers = list(headers)
    _check_origin(headers, allowed_hosts, cors=False)
    served = SERVED.get(path)
    if served is None or not served.socket_event:
        raise HTTPError(404, "not_found", f"no WebSocket route at {path}")
    check_key(headers, api_key, client_keys)
    return served


def socket_body(served: Served, message: bytes) -> bytes:
    """A WebSocket message asking for a turn (``{"type": <socket_event>, ...}``) as the
    body its route parses, or a 400 naming what this server does not take."""
    try:
        obj = decode_body(message)
    except BadRequest as exc:
        raise HTTPError(400, "invalid_request", str(exc)) from None
    kind = obj.pop("type", None)
    if kind != served.socket_event:
        raise HTTPError(
            400,
            "invalid_request",
            f"event type {kind!r} is not taken by this server; send {served.socket_event!r}",
        )
    return msgspec.json.encode(obj)


def check_key(headers: Headers, api_key: str | None, client_keys: bool) -> None:
    """With client keys, a request must present one (the shell looks it up in its
    store: a 401 for a secret no key has); else the server's one ``api_key``."""
    if not client_keys:
        authenticate(headers, api_key)
    elif not presented_key(headers):
        raise unknown_client_key()


def presented_key(headers: Headers) -> bytes:
    """The key a request presents (``Authorization: Bearer``, ``x-api-key`` or
    ``api-key``), empty when none."""
    given = b""
    for name, value in headers:
        lname = name.lower()
        if lname == b"authorization" and value[:7].lower() == b"bearer ":
            given = value[7:].strip()
        elif lname in (b"x-api-key", b"api-key") and not given:
            given = value.strip()
    return given


def _why_not(path: str) -> str:
    """What a 404 adds for the paths a newcomer gets wrong: the dashboard, served only
    by a server given an admin key (its paths never reach here then), and a client
    whose base URL lacks the ``/v1`` the OpenAI SDK wants or repeats the one the
    Anthropic SDK adds."""
    if path == "/admin" or path.startswith("/admin/"):
        return (
            ": the dashboard is on only when the server has an admin key "
            "(STREAMFN_ADMIN_KEY in its environment)"
        )
    if "/v1" + path in SERVED:
        return (
            f": did you mean /v1{path}? An OpenAI client's base URL ends in /v1 "
            "(http://HOST:PORT/v1)"
        )
    if path.startswith("/v1/v1/") and path.removeprefix("/v1") in SERVED:
        return (
            ": the client's base URL ends in /v1 and its SDK adds /v1 too; an Anthropic "
            "client's base URL is http://HOST:PORT, without /v1"
        )
    return ""


def authenticate(headers: Headers, expected: str | None) -> None:
    """The client's key must be ``expected``, compared in constant time; None expects
    none (loopback use)."""
    if expected and not hmac.compare_digest(presented_key(headers), expected.encode()):
        raise HTTPError(401, "auth", UNAUTHORIZED)


def is_admin(headers: Headers, admin_key: str | None, *, open_server: bool) -> bool:
    """Whether a request may see what the operator sees (`authenticate_admin` passes)."""
    try:
        authenticate_admin(headers, admin_key, open_server=open_server)
    except HTTPError:
        return False
    return True


def authenticate_admin(headers: Headers, admin_key: str | None, *, open_server: bool) -> None:
    """An operator's route (``/metrics``, the dashboard) needs the admin key; a client
    key never opens one. With no admin key set they are open only on a server with no
    authentication at all (loopback use), and off (404) otherwise."""
    if not admin_key:
        if open_server:
            return
        raise HTTPError(
            404,
            "not_found",
            "the operator's routes are off: give the server an admin key "
            "(STREAMFN_ADMIN_KEY) to turn them on",
        )
    given = presented_key(headers)
    if not given:
        raise HTTPError(401, "auth", "this route needs the admin key (Authorization: Bearer)")
    if not hmac.compare_digest(given, admin_key.encode()):
        raise HTTPError(
            403, "forbidden", "this route needs the admin key; a client key never opens it"
        )


def admit(*, closing: bool, admitted: int, capacity: int) -> None:
    """Whether one more completion may start reading its body (``capacity``: running
    streams plus the queue)."""
    if closing:
        raise HTTPError(503, "unavailable", "server is shutting down", retry_after=1)
    if admitted >= capacity:
        raise HTTPError(
            429,
            "overloaded",
            f"server busy: {admitted} requests open (limit {capacity})",
            retry_after=1,
        )


#: What a parsed request holds beyond its body, per JSON object or array in it. Measured
#: as Python objects: a message, a content part or a tool costs 100 to 310 bytes beyond
#: its JSON text (a long prompt costs its length and nothing more).
PARSED_BYTES_PER_CONTAINER: Final = 320
#: ... and per JSON value of any kind: a number or a short string is a Python object
#: of 30 to 60 bytes where its JSON text may be one or two
PARSED_BYTES_PER_VALUE: Final = 64
#: What any parsed request holds beside that (its options, context and request objects).
PARSED_BASE_BYTES: Final = 16 << 10
#: What a parse holds for a moment beyond what its result keeps, per JSON object or
#: array: the decoded JSON next to the request built from it and the typed check's
#: copy of that (measured: under 1,000 bytes for a message or a content part)
PARSING_BYTES_PER_CONTAINER: Final = 1280
#: ... per JSON value of any kind (measured: under 50 bytes for a number or a short string)
PARSING_BYTES_PER_VALUE: Final = 128
#: ... and per byte of the body, besides the body's strings at their width: the
#: copies of it the value count makes (measured: under 2)
PARSING_BYTES_PER_BODY_BYTE: Final = 2
#: a character that makes Python keep a string at 4 bytes a character (UTF-8 of a
#: character beyond U+FFFF, or its escaped surrogate), or at 2 (beyond U+00FF)
_FOUR_BYTE_TEXT: Final = re.compile(rb"[\xf0-\xf4]|\\u[dD][89abAB]")
_TWO_BYTE_TEXT: Final = re.compile(rb"[\xc4-\xef]|\\u(?!00)")


def _text_width(body: bytes) -> int:
    """Bytes per character of the widest string ``body`` can decode to: one emoji keeps
    its whole string at 4 bytes a character, so a JSON text can take 4 times its size."""
    if _FOUR_BYTE_TEXT.search(body):
        return 4
    return 2 if _TWO_BYTE_TEXT.search(body) else 1


def parsed_cost(body: bytes) -> int:
    """The memory a parsed ``body`` holds beyond the body's own bytes: an estimate from
    above, read off the raw bytes before parsing (C-speed counts and searches; a brace
    or a comma inside a string is counted too, which only overestimates)."""
    containers = body.count(b"{") + body.count(b"[")
    values = 1 + containers + body.count(b",")  # at least the JSON values there are
    wider = (_text_width(body) - 1) * len(body)  # its strings, beyond the body's bytes
    return (
        PARSED_BASE_BYTES
        + PARSED_BYTES_PER_CONTAINER * containers
        + PARSED_BYTES_PER_VALUE * values
        + wider
    )


def parsing_cost(body: bytes) -> int:
    """The most memory parsing ``body`` holds at once beyond the body's own bytes: what
    the result keeps (`parsed_cost`) and what the parse holds only for a moment, an
    estimate from above read off the raw bytes as `parsed_cost` is."""
    containers = body.count(b"{") + body.count(b"[")
    values = 1 + containers + body.count(b",")
    per_byte = PARSING_BYTES_PER_BODY_BYTE + _text_width(body)
    passing = (
        PARSING_BYTES_PER_CONTAINER * containers
        + PARSING_BYTES_PER_VALUE * values
        + per_byte * len(body)
    )
    return parsed_cost(body) + passing


class BodyBudget:
    """Request bytes held in memory, all requests together, and each body's cap.

    A body is charged as it arrives, then (`hold_parse`) with what parsing it holds at
    its most (`parsing_cost`), given back (`release`) down to what its parsed form
    keeps (`parsed_cost`) once it is parsed; that charge stays until the request
    ends: requests waiting on a slow model hold their parsed form all that time. A
    non-streaming answer's events are charged as they arrive (`hold_answer`) and held
    likewise. Past ``max_buffered`` a
    request is a 503 with ``Retry-After`` (many slow or large bodies cannot
    exhaust memory); past ``max_body`` it is a 413, and so is a request whose
    parsed form alone would never fit.
    """

    def __init__(self, max_body: int, max_buffered: int) -> None:
        self.max_body = max_body
        self.max_buffered = max_buffered
        #: bytes of requests held right now (bodies, and their parsed forms)
        self.buffered = 0

    def hold(self, held: int, chunk: int) -> None:
        """Count ``chunk`` more bytes of a body that holds ``held`` already, or refuse."""
        if held + chunk > self.max_body:
            raise HTTPError(
                413, "too_large", f"request body larger than {self.max_body} bytes (server limit)"
            )
        self._take(chunk)

    def hold_parsed(self, held: int, extra: int) -> None:
        """Count ``extra`` bytes (`parsing_cost`) for a request that holds ``held`` already."""
        if held + extra > self.max_buffered:
            raise HTTPError(
                413,
                "too_large",
                f"request too complex: parsing it would hold about {(held + extra) >> 10} KiB, "
                f"more than the server's memory budget ({self.max_buffered >> 10} KiB); send "
                "fewer or larger messages, parts or tools",
            )
        self._take(extra)

    def hold_parse(self, held: int, body: bytes) -> tuple[int, int]:
        """Charge parsing ``body`` at its most for a request that holds ``held`` already
        (`hold_parsed`); the charge and what of it stays once the body is parsed (its
        parsed form's, `parsed_cost`: `release` the rest then)."""
        parsing = parsing_cost(body)
        self.hold_parsed(held, parsing)
        return parsing, parsed_cost(body)

    def hold_answer(self, size: int) -> None:
        """Count ``size`` more bytes of an answer folded whole (``"stream": false``): it is
        held until the request ends, like the request itself, or refused (a 503)."""
        self._take(size)

    def _take(self, size: int) -> None:
        if self.buffered + size > self.max_buffered:
            raise HTTPError(
                503,
                "overloaded",
                "server busy: too many requests in memory; retry shortly",
                retry_after=1,
            )
        self.buffered += size

    def release(self, held: int) -> int:
        """Give back ``held`` bytes; returns them."""
        self.buffered -= held
        return held


def disconnected_early() -> HTTPError:
    return HTTPError(400, "invalid_request", "client disconnected")


def body_too_slow(timeout: float) -> HTTPError:
    return HTTPError(408, "timeout", f"the request body did not arrive within {timeout:g} s")


def parse_request(
    path: str,
    body: bytes,
    allow_server_tools: frozenset[str] = frozenset(),
    allow_input_urls: bool = False,
    default_model: str | None = None,
) -> ClientRequest:
    """The body in ``path``'s dialect, or a 400 naming what is wrong with it. A server
    tool (run and billed on the server's key) passes only if its type is allowed, with
    the config keys `check_client_inputs` lists; image and document URLs only if allowed.
    ``default_model``: the model of a front-end request that names none."""
    served = SERVED.get(path)
    if served is None or served.parse is None:
        raise HTTPError(404, "not_found", f"no route reads a request body at {path}")
    try:
        request = served.parse(body, allow_server_tools, default_model)
        return check_client_inputs(request, allow_input_urls=allow_input_urls)
    except TooLarge as exc:
        raise HTTPError(413, "too_large", str(exc)) from None
    except BadRequest as exc:
        raise HTTPError(400, "invalid_request", str(exc)) from None


def check_input_hosts(names: dict[str, int], resolved: dict[str, list[str]] | None) -> None:
    """A 400 unless each input-URL host name resolved to public addresses only
    (``resolved`` None: the lookups did not finish in time)."""
    if resolved is None:
        raise HTTPError(
            400,
            "invalid_request",
            f"the input URL hosts ({', '.join(sorted(names))}) did not resolve in time, "
            "so they cannot be checked",
        )
    try:
        check_resolved_hosts(names, resolved)
    except BadRequest as exc:
        raise HTTPError(400, "invalid_request", str(exc)) from None


def check_model(served: Served, request: ClientRequest, limit: int | None) -> None:
    """``limit``: the most tokens the model generates per request (None: no stated one)."""
    wanted = request.options.max_tokens
    if limit is not None and wanted is not None and wanted > limit:
        raise HTTPError(
            400,
            "invalid_request",
            f"{served.options_at}.{served.max_tokens_name}: {wanted} is more than "
            f"{request.model} generates per request ({limit})",
        )


def models_body(names: list[str], headers: Headers) -> dict[str, Any]:
    """``GET /v1/models`` in Anthropic's shape (an ``anthropic-version`` header) or OpenAI's."""
    if any(k.lower() == b"anthropic-version" for k, _ in headers):
        data = [
            {"type": "model", "id": n, "display_name": n, "created_at": "1970-01-01T00:00:00Z"}
            for n in names
        ]
        return {
            "data": data,
            "has_more": False,
            "first_id": names[0] if names else None,
            "last_id": names[-1] if names else None,
        }
    return {
        "object": "list",
        "data": [{"id": n, "object": "model", "created": 0, "owned_by": "streamfn"} for n in names],
    }
