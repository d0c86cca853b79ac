"""Which client image and document URLs may go to an upstream, decided from their text
and from the addresses their host resolves to.

The server never fetches a client's URL; the upstream does, from its own network.
An upstream on the operator's network (vLLM, llama.cpp, a proxy) would fetch an
intranet or cloud-metadata address for the client, so with ``--allow-input-urls``
a URL passes only when its host is

- a public IP literal in its one canonical spelling (four decimal octets without
  leading zeros, or an IPv6 address in brackets), or
- a DNS name that is not a metadata or special-use name, does not embed an IP
  address (``127.0.0.1.nip.io``), and whose every resolved address is public.

Parsers disagree on everything else, which is how a private address slips past a
check that parses differently from the fetcher: ``127.1``, ``0x7f000001``,
``2130706433`` and ``0177.0.0.1`` are all 127.0.0.1 to a URL library, and
``http://127.0.0.1\\@example.com/`` names 127.0.0.1 to one and example.com to
another. So backslashes, user info, percent signs and non-ASCII characters in
the host, and every non-canonical numeric host, are refused rather than
interpreted. IPv6 addresses that carry an IPv4 one (IPv4-mapped and -compatible,
NAT64, 6to4, Teredo) are refused whatever they carry: a gateway on the path
would turn them into the IPv4 address.

Resolution is I/O, so the shell does it (`names_to_resolve` says which names,
`resolved_problem` judges what came back); this module reads no network.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Sequence
from typing import Final
from urllib.parse import urlsplit

__all__ = [
    "FILE_HOSTS",
    "METADATA_HOSTS",
    "WILDCARD_DNS_SUFFIXES",
    "host_to_resolve",
    "public_address",
    "resolved_problem",
    "upstream_fetch_warnings",
    "url_problem",
]

#: hosts whose URLs name a provider's stored files (the operator's uploads)
FILE_HOSTS: Final = frozenset(
    {
        "generativelanguage.googleapis.com",
        "storage.googleapis.com",
        "api.openai.com",
        "api.anthropic.com",
        "files.openai.com",
    }
)
#: cloud instance-metadata names (each resolves to a link-local or private address on
#: the cloud's own network, and to nothing, or anything, elsewhere)
METADATA_HOSTS: Final = frozenset(
    {
        "metadata",
        "metadata.google.internal",
        "metadata.goog",
        "metadata.azure.internal",
        "instance-data",
        "instance-data.ec2.internal",
        "metadata.tencentyun.com",
        "metadata.platformequinix.com",
    }
)
#: wildcard-DNS services that answer a name with the address it spells
#: (``10.0.0.1.nip.io`` -> 10.0.0.1); refused whatever the name spells
WILDCARD_DNS_SUFFIXES: Final = (
    "nip.io",
    "sslip.io",
    "xip.io",
    "traefik.me",
    "localtest.me",
    "lvh.me",
    "vcap.me",
    "lacolhost.com",
    "fuf.me",
)
#: special-use top-level names (RFC 6761, RFC 8375, ICANN's ``.internal``): never a
#: public host
_SPECIAL_TLDS: Final = frozenset(
    {
        "localhost",
        "localdomain",
        "local",
        "internal",
        "intranet",
        "lan",
        "home",
        "corp",
        "arpa",
        "test",
        "invalid",
        "onion",
    }
)
#: IPv6 ranges that carry an IPv4 address (or route to one through a translator)
_EMBEDS_IPV4: Final = tuple(
    ipaddress.ip_network(n)
    for n in (
        "::ffff:0:0/96",  # IPv4-mapped
        "::/96",  # IPv4-compatible (deprecated), also :: and ::1
        "::ffff:0:0:0/96",  # IPv4-translated (SIIT)
        "64:ff9b::/96",  # NAT64, well-known prefix
        "64:ff9b:1::/48",  # NAT64, local use
        "2002::/16",  # 6to4
        "2001::/32",  # Teredo
    )
)
#: one decimal octet, canonical: 0-255 without a leading zero
_OCTET: Final = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
_CANONICAL_IPV4: Final = re.compile(rf"{_OCTET}(?:\.{_OCTET}){{3}}")
#: a DNS label: letters, digits, hyphen (and underscore, which some names carry)
_LABEL: Final = re.compile(r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?")
#: a label a URL parser would read as a number (decimal, octal or hex)
_NUMERIC: Final = re.compile(r"(?:0x[0-9a-f]*|[0-9]+)")
#: four dotted (or dashed) decimal numbers inside a name: an address it spells
_EMBEDDED_IPV4: Final = re.compile(
    r"(?:^|(?<=[.-]))(?=(\d{1,3})[.-](\d{1,3})[.-](\d{1,3})[.-](\d{1,3})(?:$|[.-]))"
)


def public_address(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """Reachable on the public internet and nothing else: not loopback, private,
    link-local, shared (CGNAT), reserved, multicast or unspecified, and not an IPv6
    address that carries an IPv4 one."""
    if isinstance(address, ipaddress.IPv6Address) and any(
        address in network for network in _EMBEDS_IPV4
    ):
        return False
    return (
        address.is_global
        and not address.is_multicast
        and not address.is_reserved
        and not address.is_unspecified
    )


def url_problem(url: str) -> str | None:
    """Why ``url`` may not go upstream for a client, judged from its text alone, or None.
    A URL that passes may still name a DNS host: `host_to_resolve` gives it."""
    problem, _ = _judge(url)
    return problem


def host_to_resolve(url: str) -> str | None:
    """The DNS name the shell must resolve before ``url`` may go upstream (None: an IP
    literal, judged already). Call only for URLs `url_problem` passed."""
    _, name = _judge(url)
    return name


def resolved_problem(host: str, addresses: Sequence[str]) -> str | None:
    """Why ``host``, resolved by the shell to ``addresses``, may not be fetched for a
    client, or None. No address (the name does not resolve) is a refusal too: the
    upstream may resolve it differently."""
    if not addresses:
        return f"{host} does not resolve to an address here, so it cannot be checked"
    for text in addresses:
        try:
            address = ipaddress.ip_address(text.split("%", 1)[0])
        except ValueError:
            return f"{host} resolves to {text!r}, which is not an IP address"
        if not public_address(address):
            return f"{host} resolves to {address}, which is not a public address"
    return None


def upstream_fetch_warnings(base_urls: dict[str, str]) -> list[str]:
    """What ``--allow-input-urls`` cannot protect: an upstream whose base URL would be
    refused as an input URL for being local (loopback, private, a local name) is on
    the operator's network, and it fetches client URLs itself, following its own DNS
    answers and redirects. One warning per such ``provider -> URL``."""
    return [
        f"--allow-input-urls with --base-url {provider}={url}: that upstream is on this "
        "machine or network and fetches client URLs itself; a redirect or a DNS answer "
        "it gets later can still lead it to an intranet address"
        for provider, url in base_urls.items()
        if url_problem(url) is not None and urlsplit(url).hostname not in FILE_HOSTS
    ]


def _judge(url: str) -> tuple[str | None, str | None]:
    """(why ``url`` is refused, or None; the DNS name left to resolve, or None)."""
    if "\\" in url:
        return "a URL with a backslash is read differently by different parsers", None
    if any(ord(c) <= 0x20 or ord(c) == 0x7F for c in url):
        return "a URL may not hold spaces or control characters", None
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a bad port
    except ValueError:
        return "not a valid URL", None
    if "@" in parts.netloc:
        return "a URL may not carry user info (user:password@)", None
    host = parts.hostname or ""
    if not host:
        return "a URL needs a host", None
    if parts.netloc.startswith("["):
        return _ipv6_problem(host), None
    if not host.isascii() or "%" in host:
        return (
            f"the host {host!r} must be plain ASCII (an international name in its "
            "xn-- form), without percent-encoding"
        ), None
    host = host.rstrip(".")
    labels = host.split(".")
    if _NUMERIC.fullmatch(labels[-1]):  # a URL parser reads the host as an IPv4 address
        return _ipv4_problem(host), None
    problem = _name_problem(host, labels)
    return problem, (None if problem else host)


def _ipv4_problem(host: str) -> str | None:
    if not _CANONICAL_IPV4.fullmatch(host):
        return (
            f"{host} is not an IPv4 address in its canonical form (four decimal numbers "
            "0-255 without leading zeros); other spellings are read differently by "
            "different parsers"
        )
    if not public_address(ipaddress.IPv4Address(host)):
        return f"{host} is not a public address (loopback, private, link-local or reserved)"
    return None


def _ipv6_problem(host: str) -> str | None:
    if "%" in host:
        return "an IPv6 address with a zone (%) names this machine's network"
    try:
        address = ipaddress.IPv6Address(host)
    except ValueError:
        return f"[{host}] is not a valid IPv6 address"
    if address.is_loopback or address.is_unspecified:  # inside ::/96, but no IPv4 in them
        which = "loopback" if address.is_loopback else "unspecified"
        return f"[{host}] is the IPv6 {which} address (this machine), not a public address"
    if any(address in network for network in _EMBEDS_IPV4):
        return (
            f"[{host}] carries an IPv4 address (mapped, NAT64, 6to4 or Teredo); send the "
            "IPv4 address itself"
        )
    if not public_address(address):
        return f"[{host}] is not a public address (loopback, private, link-local or reserved)"
    return None


def _name_problem(host: str, labels: list[str]) -> str | None:
    if not all(_LABEL.fullmatch(label) for label in labels) or len(host) > 253:
        return f"{host!r} is not a valid host name"
    if host in METADATA_HOSTS:
        return f"{host} is a cloud metadata service"
    if len(labels) == 1 or labels[-1] in _SPECIAL_TLDS:
        return f"{host} is a local or special-use name, not a public host"
    if host in FILE_HOSTS:
        return f"{host} holds provider files (the operator's uploads); send the bytes"
    if any(host == s or host.endswith("." + s) for s in WILDCARD_DNS_SUFFIXES):
        return f"{host} is a wildcard-DNS name (it answers with whatever address it spells)"
    for match in _EMBEDDED_IPV4.finditer(host):
        octets = [int(g) for g in match.groups()]
        if all(o <= 255 for o in octets):
            spelled = ipaddress.IPv4Address(".".join(map(str, octets)))
            if not public_address(spelled):
                return f"{host} spells the non-public address {spelled}"
    return None
