"""AWS Signature Version 4 as a pure function (the header-based form).

The clock is an argument, so the same request and instant always give the
same headers; shells pass ``datetime.now(UTC)``. Nothing here keeps or logs a
key, and no error message carries a header value, a key or the URL (which
may hold userinfo).

Path encoding, the usual trap: for every service but S3 the canonical URI is
the path *as sent on the wire* URI-encoded once more. A Bedrock model id is
percent-encoded into the URL (``v1:0`` -> ``v1%3A0``, see
`encode_path_segment`) and therefore appears as ``v1%253A0`` in the canonical
request; that is the "encode each segment twice" rule of the AWS docs, and
what botocore's serializer plus signer produce. The URL passed in must be the
one sent: the signature covers it byte for byte. A raw ``:`` left in the URL
is signed exactly as botocore signs that URL (``%3A``), but servers are not
obliged to treat ``:`` and ``%3A`` alike, so request builders should encode
segments as the AWS SDKs do.

Query strings are canonicalised from their decoded form (percent-decode, then
encode everything but ``A-Za-z0-9-_.~``). On a properly encoded query that is
the identity, and matches botocore; on a sloppy one (a raw ``:``, a lowercase
escape) it follows the spec's "encode each name and value" where botocore
would sign the raw text. A ``+`` is a literal plus: encode spaces as ``%20``.

Header handling follows botocore's ``SigV4Auth``: every header is signed
except hop-by-hop and tracing ones; values are trimmed and inner whitespace
runs collapsed; same-named headers (case-insensitively) are joined with
commas in the order given. A caller-supplied ``Date`` header is replaced by
the signing time and used instead of ``X-Amz-Date``; a caller-supplied
``X-Amz-Content-SHA256`` (e.g. ``UNSIGNED-PAYLOAD``) is used verbatim as the
payload hash.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from email.utils import formatdate
from typing import Final
from urllib.parse import SplitResult, quote, unquote_to_bytes, urlsplit

__all__ = ["encode_path_segment", "sign_request"]

ALGORITHM: Final = "AWS4-HMAC-SHA256"

#: Not signed: hop-by-hop headers a proxy may rewrite and tracing headers
#: added after signing; the same list botocore uses, so signatures agree.
UNSIGNED_HEADERS: Final = frozenset(
    {
        "baggage",
        "connection",
        "expect",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "traceparent",
        "tracestate",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "user-agent",
        "x-amzn-trace-id",
    }
)

# RFC 9110 token characters.
_TOKEN: Final = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_BAD_VALUE_CHARS: Final = re.compile(r"[\r\n\x00]")
# Set by the signer; a caller's copy would be stale or contradictory.
_REPLACED: Final = frozenset({"authorization", "x-amz-date"})


def encode_path_segment(segment: str) -> str:
    """Percent-encode one path segment for the URL (``:`` and ``/`` included)."""
    return quote(segment, safe="~")


def _remove_dot_segments(path: str) -> str:
    # RFC 3986 §5.2.4, plus the empty-segment collapsing AWS applies to
    # non-S3 paths: "a//b/./c/../d" -> "a/b/d", keeping a leading and a
    # trailing slash.
    if not path:
        return "/"
    kept: list[str] = []
    for segment in path.split("/"):
        if not segment or segment == ".":
            continue
        if segment == "..":
            if kept:
                kept.pop()
        else:
            kept.append(segment)
    lead = "/" if path.startswith("/") else ""
    trail = "/" if path.endswith("/") and kept else ""
    return lead + "/".join(kept) + trail


def _canonical_uri(path: str) -> str:
    # The wire path, already percent-encoded, encoded once more ("%3A" ->
    # "%253A"): the non-S3 rule.
    return quote(_remove_dot_segments(path), safe="/~")


def _canonical_query(query: str) -> str:
    pairs: list[tuple[str, str]] = []
    for item in query.split("&"):
        if not item:
            continue
        key, _, value = item.partition("=")
        # Decode to bytes, not str: "%FF" must stay "%FF", not become U+FFFD.
        pairs.append(
            (quote(unquote_to_bytes(key), safe="-_.~"), quote(unquote_to_bytes(value), safe="-_.~"))
        )
    pairs.sort()
    return "&".join(f"{key}={value}" for key, value in pairs)


def _host_header(scheme: str, hostname: str, port: int | None) -> str:
    host = f"[{hostname}]" if ":" in hostname else hostname
    default = {"http": 80, "https": 443}.get(scheme)
    if port is not None and port != default:
        host = f"{host}:{port}"
    return host


def _hmac(key: bytes, message: str) -> bytes:
    return hmac.new(key, message.encode("utf-8"), hashlib.sha256).digest()


def sign_request(
    *,
    method: str,
    url: str,
    headers: Mapping[str, str],
    body: bytes,
    region: str,
    service: str,
    access_key: str,
    secret_key: str,
    session_token: str | None = None,
    timestamp: datetime,
    add_content_sha256: bool = False,
) -> dict[str, str]:
    """Every header to send with the request, ``Authorization`` included.

    The result is ``headers`` (minus any stale ``Authorization`` or
    ``X-Amz-Date``) plus ``host`` when absent, ``X-Amz-Date`` (or the
    rewritten ``Date``), ``X-Amz-Security-Token`` for temporary credentials,
    ``X-Amz-Content-SHA256`` when ``add_content_sha256`` asks for it (S3-style
    services want it; Bedrock does not) and ``Authorization``.

    ``service`` is the signing name, which is not always the endpoint's:
    ``bedrock-runtime.<region>.amazonaws.com`` signs as ``"bedrock"``.
    ``timestamp`` must be timezone-aware. Raises ValueError for a naive
    timestamp, a URL without a host, or a header that is not valid HTTP.
    """
    if timestamp.tzinfo is None or timestamp.utcoffset() is None:
        raise ValueError("timestamp must be timezone-aware")
    when = timestamp.astimezone(UTC)
    amz_date = when.strftime("%Y%m%dT%H%M%SZ")
    day = amz_date[:8]

    parts, host = _split_url(url)
    out = _headers_to_send(
        headers,
        host=host,
        when=when,
        session_token=session_token,
        add_content_sha256=add_content_sha256,
    )
    payload_hash = _payload_hash(out, body, add_content_sha256)
    signed_headers, canonical_headers = _canonical_headers(out)
    canonical_request = "\n".join(
        [
            method.upper(),
            _canonical_uri(parts.path),
            _canonical_query(parts.query),
            canonical_headers,
            signed_headers,
            payload_hash,
        ]
    )
    scope = f"{day}/{region}/{service}/aws4_request"
    signature = _signature(secret_key, amz_date, (day, region, service), canonical_request)
    out["Authorization"] = (
        f"{ALGORITHM} Credential={access_key}/{scope}, "
        f"SignedHeaders={signed_headers}, Signature={signature}"
    )
    return out


def _split_url(url: str) -> tuple[SplitResult, str]:
    """The URL's parts and its ``host`` header value; ValueError without a host."""
    try:
        parts = urlsplit(url)
        hostname = parts.hostname
        port = parts.port
    except ValueError:
        raise ValueError("url is not a valid absolute URL") from None
    if not hostname:
        raise ValueError("url has no host")
    return parts, _host_header(parts.scheme, hostname, port)


def _signature(
    secret_key: str, amz_date: str, scope: tuple[str, str, str], canonical_request: str
) -> str:
    """The hex signature of the canonical request, with the key derived for the
    scope ``(day, region, service)``."""
    string_to_sign = "\n".join(
        [
            ALGORITHM,
            amz_date,
            "/".join((*scope, "aws4_request")),
            hashlib.sha256(canonical_request.encode("utf-8")).hexdigest(),
        ]
    )
    day, region, service = scope
    signing_key = _hmac(f"AWS4{secret_key}".encode(), day)
    for part in (region, service, "aws4_request"):
        signing_key = _hmac(signing_key, part)
    return hmac.new(signing_key, string_to_sign.encode("utf-8"), hashlib.sha256).hexdigest()


def _headers_to_send(
    headers: Mapping[str, str],
    *,
    host: str,
    when: datetime,
    session_token: str | None,
    add_content_sha256: bool,
) -> dict[str, str]:
    """The caller's headers, checked, without the ones signing replaces, plus
    ``host``, the date and the session token: everything but ``Authorization``."""
    lowered = {name.lower() for name in headers}
    out: dict[str, str] = {}
    if "host" not in lowered:
        out["host"] = host
    drop = set(_REPLACED)
    if "date" in lowered:
        drop.add("date")
    if session_token:
        drop.add("x-amz-security-token")
    if add_content_sha256:
        drop.add("x-amz-content-sha256")
    for name, value in headers.items():
        if not _TOKEN.fullmatch(name):
            raise ValueError(f"invalid header name {name!r}")
        if _BAD_VALUE_CHARS.search(value):
            raise ValueError(f"header {name!r} has a CR, LF or NUL in its value")
        if name.lower() not in drop:
            out[name] = value
    if "date" in lowered:
        out["Date"] = formatdate(int(when.timestamp()))
    else:
        out["X-Amz-Date"] = when.strftime("%Y%m%dT%H%M%SZ")
    if session_token:
        out["X-Amz-Security-Token"] = session_token
    return out


def _payload_hash(out: dict[str, str], body: bytes, add_content_sha256: bool) -> str:
    """The body's SHA-256 (a caller's ``X-Amz-Content-SHA256`` wins), added to
    ``out`` when ``add_content_sha256`` asks for it."""
    for name, value in out.items():
        if name.lower() == "x-amz-content-sha256":
            return value
    payload_hash = hashlib.sha256(body).hexdigest()
    if add_content_sha256:
        out["X-Amz-Content-SHA256"] = payload_hash
    return payload_hash


def _canonical_headers(out: dict[str, str]) -> tuple[str, str]:
    """(signed header names, canonical header block) of the headers that are signed."""
    grouped: dict[str, list[str]] = {}
    for name, value in out.items():
        key = name.lower()
        if key not in UNSIGNED_HEADERS:
            grouped.setdefault(key, []).append(" ".join(value.split()))
    signed_names = sorted(grouped)
    canonical = "".join(f"{key}:{','.join(grouped[key])}\n" for key in signed_names)
    return ";".join(signed_names), canonical
