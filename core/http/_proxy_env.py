"""Which proxy, if any, an HTTPS request goes through: HTTPS_PROXY and NO_PROXY.

A pure function of the environment mapping the shell passes in (the core
never reads ``os.environ``), following the conventions curl, requests and
httpx share: upper- or lower-case names, NO_PROXY as a comma-separated list
of host names (``example.com`` and ``.example.com`` both match subdomains),
``host:port`` entries, IP literals, CIDR blocks and ``*`` for everything.
Only ``https`` targets use HTTPS_PROXY (through a CONNECT tunnel, so TLS
stays end to end); plain ``http`` targets are local model servers in
practice and are connected to directly.
"""

from __future__ import annotations

import base64
import ipaddress
from collections.abc import Mapping
from urllib.parse import unquote, urlsplit

import msgspec

__all__ = ["Proxy", "no_proxy_matches", "proxy_for"]


class Proxy(msgspec.Struct, frozen=True, kw_only=True):
    """Where to open the tunnel; ``authorization`` is the Proxy-Authorization value."""

    host: str
    port: int
    authorization: str | None = None

    def __repr__(self) -> str:
        auth = ", authorization=***" if self.authorization else ""
        return f"Proxy(host={self.host!r}, port={self.port}{auth})"


def _env(environ: Mapping[str, str], name: str) -> str:
    return (environ.get(name.lower()) or environ.get(name.upper()) or "").strip()


def proxy_for(scheme: str, host: str, port: int, environ: Mapping[str, str]) -> Proxy | None:
    """The proxy for ``scheme://host:port``, or None to connect directly.

    Raises ValueError for a proxy URL that cannot be used (the message never
    includes the URL's credentials).
    """
    if scheme != "https":
        return None
    raw = _env(environ, "https_proxy")
    if not raw or no_proxy_matches(host, port, _env(environ, "no_proxy")):
        return None
    if "://" not in raw:
        raw = "http://" + raw
    parts = urlsplit(raw)
    if parts.scheme != "http":
        raise ValueError(
            f"HTTPS_PROXY scheme {parts.scheme!r} is not supported; use an http:// proxy URL"
        )
    if not parts.hostname:
        raise ValueError("HTTPS_PROXY has no host name")
    try:
        proxy_port = parts.port or 80
    except ValueError:
        raise ValueError("HTTPS_PROXY has an invalid port") from None
    authorization = None
    if parts.username is not None:
        userpass = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
        authorization = "Basic " + base64.b64encode(userpass.encode()).decode("ascii")
    return Proxy(host=parts.hostname, port=proxy_port, authorization=authorization)


def no_proxy_matches(host: str, port: int, no_proxy: str) -> bool:
    """True when NO_PROXY says ``host:port`` must be reached directly."""
    host = host.strip("[]").rstrip(".").lower()
    for entry in (e.strip().lower() for e in no_proxy.split(",")):
        if not entry:
            continue
        if entry == "*":
            return True
        entry_host, entry_port = _split_port(entry)
        if entry_port is not None and entry_port != port:
            continue
        if _host_matches(host, entry_host):
            return True
    return False


def _split_port(entry: str) -> tuple[str, int | None]:
    if entry.startswith("["):  # [::1]:8080
        inner, _, rest = entry[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ""
        return inner, int(port) if port.isdigit() else None
    if entry.count(":") == 1:
        name, _, port = entry.partition(":")
        if port.isdigit():
            return name, int(port)
    return entry, None


def _host_matches(host: str, entry: str) -> bool:
    entry = entry.rstrip(".")
    if "/" in entry:
        try:
            return ipaddress.ip_address(host) in ipaddress.ip_network(entry, strict=False)
        except ValueError:
            return False
    entry = entry.lstrip("*").lstrip(".")
    if not entry:
        return False
    return host == entry or host.endswith("." + entry)
