"""What a provider's request is made of: the `HTTPRequest` value and the helpers
every request builder uses (JSON body, headers, credential header, API root).

Pure functions over `Model` and `Options`; the call classes in `_base` never
build requests, and request builders never see a response.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final
from urllib.parse import urlsplit

import msgspec

from .._options import Options
from .._redact import redact_url
from ..catalogue._models import Model

__all__ = [
    "SECRET_HEADERS",
    "HTTPRequest",
    "api_root",
    "bearer",
    "json_request",
    "merge_extra_body",
    "redact_headers",
    "request_headers",
    "route_request",
]

#: Header names whose values are credentials; never logged, never in a repr.
SECRET_HEADERS: Final = frozenset(
    {
        "authorization",
        "x-api-key",
        "api-key",
        "x-goog-api-key",
        "x-amz-security-token",
        "proxy-authorization",
        "cookie",
    }
)


def redact_headers(headers: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """``headers`` with the value of each secret one (`SECRET_HEADERS`) as ``***``,
    for logs and errors."""
    return [(k, "***" if k.lower() in SECRET_HEADERS else v) for k, v in headers]


class HTTPRequest(msgspec.Struct, frozen=True, kw_only=True):
    """What the shell must send. Built by the provider, never touched by the shell."""

    method: str
    url: str
    headers: list[tuple[str, str]]
    body: bytes

    def __repr__(self) -> str:
        return (
            f"HTTPRequest(method={self.method!r}, url={redact_url(self.url)!r}, "
            f"headers={redact_headers(self.headers)!r}, body=<{len(self.body)} bytes>)"
        )


_JSON_ENCODER: Final = msgspec.json.Encoder()


def bearer(api_key: str | None) -> tuple[str, str] | None:
    """The ``Authorization: Bearer`` header for ``api_key``; None without a key."""
    return ("authorization", f"Bearer {api_key}") if api_key else None


def request_headers(
    model: Model, options: Options, *, accept: str, auth: tuple[str, str] | None = None
) -> list[tuple[str, str]]:
    """JSON-in, stream-out headers plus the credential header, then the caller's own.

    ``model.headers`` then ``options.headers`` replace any header of the same
    name (case-insensitively): that is how beta flags, API versions and
    gateways' extra headers get in without a provider knowing about them.
    """
    headers = [("content-type", "application/json"), ("accept", accept)]
    if auth is not None:
        headers.append(auth)
    for extra in (model.headers, options.headers):
        if extra:
            names = {k.lower() for k in extra}
            headers = [(k, v) for k, v in headers if k.lower() not in names]
            headers.extend(extra.items())
    return headers


def api_root(base: str, version: str, *, only_bare: bool = False) -> str:
    """The base URL with the API's ``version`` path, added when the caller left it out.

    One convention for every provider: a base URL may be the server's root
    (``http://localhost:8000``) or the API root (``http://localhost:8000/v1``);
    a version already there is never doubled. ``only_bare`` is for the
    OpenAI-compatible family, whose version sits anywhere in a gateway's path
    (``/openai/v1``, ``/api/paas/v4``): it is added only to a URL with no path.
    """
    base = base.rstrip("/")
    if base.endswith(version):
        return base
    if only_bare and urlsplit(base).path:
        return base
    return base + version


def merge_extra_body(body: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    """Deep-merge ``extra`` into ``body``: objects merge key by key, lists are extended
    (so ``{"tools": [server_tool]}`` adds to the function tools), a ``None`` removes
    the key, anything else replaces it."""
    for key, value in extra.items():
        current = body.get(key)
        if value is None:
            body.pop(key, None)
        elif isinstance(value, dict) and isinstance(current, dict):
            body[key] = merge_extra_body(dict(current), value)
        elif isinstance(value, list) and isinstance(current, list):
            body[key] = [*current, *value]
        else:
            body[key] = value
    return body


def json_request(
    url: str, headers: list[tuple[str, str]], body: dict[str, Any], options: Options
) -> HTTPRequest:
    """A POST of ``body`` as JSON, with ``options.extra_body`` deep-merged over it last."""
    if options.extra_body:
        merge_extra_body(body, options.extra_body)
    return HTTPRequest(method="POST", url=url, headers=headers, body=_JSON_ENCODER.encode(body))


def route_request(
    model: Model, options: Options, default_path: str, body: dict[str, Any]
) -> HTTPRequest:
    """A streaming POST to a server route (a streamfn server's, an application's): the
    key as a bearer token, the path ``Model.extra["path"]`` or ``default_path``."""
    headers = request_headers(
        model, options, accept="text/event-stream", auth=bearer(options.api_key)
    )
    base = (options.base_url or model.base_url).rstrip("/")
    path = (model.extra or {}).get("path", default_path)
    return json_request(base + path, headers, body, options)
