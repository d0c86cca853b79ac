"""``--allow-input-urls`` passes a client's URL to the upstream only when its host is
public, however the address is spelled.

Every spelling below is a private, loopback or metadata address to some URL parser
(WHATWG's, curl's, glibc's ``inet_aton``); each is refused by the pure decision
(`parse_request`, what the app runs first) and end to end through the server, where
the upstream must see no request. DNS names are resolved by the server (a table here:
the tests run without a network) and refused when any address is not public.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from fake_provider import FakeProvider
from loopback_server import KEY, Server, provider_backend

from streamfn.asgi import App, ServerConfig
from streamfn.asgi._resolve import system_resolver
from streamfn.core.catalogue._models import openai_compatible
from streamfn.core.dialects._request_fields import BadRequest
from streamfn.core.serve._client_inputs import check_resolved_hosts, hosts_to_resolve
from streamfn.core.serve._input_urls import public_address, resolved_problem, url_problem
from streamfn.core.serve._routes import check_input_hosts, parse_request
from streamfn.core.serve._status import HTTPError

#: the spellings that passed before: each names this machine, the LAN or cloud metadata
PRIVATE_SPELLINGS = [
    "http://127.1/",
    "http://0x7f000001/",
    "http://2130706433/",
    "http://0177.0.0.1/",
    "http://0/",
    "http://10.1/",
    "http://169.254.43518/latest/meta-data",
    "http://[64:ff9b::a9fe:a9fe]/",
    "http://metadata.google.internal/",
    "http://127.0.0.1.nip.io/",
    "http://127.0.0.1\\@example.com/",
    # more of the same families
    "http://0x7f.0.0.1/",
    "http://127.0.0.1./",
    "http://00000177.0.0.1/",
    "http://127.000.000.001/",
    "http://%31%32%37.0.0.1/",
    "http://user:pass@example.com/",
    "http://example.com@127.0.0.1/",
    "http://10-0-0-1.sslip.io/",
    "http://7f000001.nip.io/",
    "http://169.254.169.254.example.com/",
    "http://metadata/computeMetadata/v1/",
    "http://instance-data.ec2.internal/",
    "http://intranet/",
    "http://printer.local/",
    "http://router.home.arpa/",
    "http://１２７.0.0.1/",
]
#: IPv6 literals that are private themselves or carry an IPv4 address to a translator
IPV6_FORMS = [
    "http://[::1]/",
    "http://[::]/",
    "http://[::ffff:127.0.0.1]/",  # IPv4-mapped
    "http://[::ffff:7f00:1]/",
    "http://[::ffff:8.8.8.8]/",  # mapped, even a public address: refused as a form
    "http://[::127.0.0.1]/",  # IPv4-compatible
    "http://[64:ff9b::7f00:1]/",  # NAT64 well-known prefix
    "http://[64:ff9b:1::a9fe:a9fe]/",  # NAT64 local-use prefix
    "http://[2002:a9fe:a9fe::1]/",  # 6to4
    "http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/",  # Teredo
    "http://[fe80::1%25eth0]/",  # link-local with a zone
    "http://[fc00::1]/",  # unique local
    "http://[ff02::1]/",  # multicast
]
#: public hosts, and the addresses their names resolve to here
PUBLIC_DNS = {
    "example.com": ["93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"],
    "images.example.org": ["1.1.1.1", "8.8.4.4"],
    "rebind.example.net": ["8.8.8.8", "10.0.0.7"],  # one private answer among public ones
    "nat64.example.net": ["64:ff9b::a9fe:a9fe"],
    "mapped.example.net": ["::ffff:169.254.169.254"],
    "loopback.example.net": ["127.0.0.1"],
}
PUBLIC_URLS = [
    "https://example.com/cat.png",
    "https://EXAMPLE.com./cat.png",
    "http://8.8.8.8/a.png",
    "http://[2606:4700:4700::1111]/a.png",
    "https://example.com:8443/a.png?x=1#y",
]
RESOLVED_PRIVATE = [
    "https://rebind.example.net/a.png",
    "https://nat64.example.net/a.png",
    "https://mapped.example.net/a.png",
    "https://loopback.example.net/a.png",
    "https://unresolvable.example.net/a.png",
]


def _table(name: str) -> list[str]:
    return PUBLIC_DNS.get(name, [])


def _chat(url: str) -> dict[str, Any]:
    return {
        "model": "fake-gpt",
        "messages": [
            {"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}}]}
        ],
    }


def _decided(url: str) -> None:
    """The whole decision for ``url``: its text, then its host's resolved addresses."""
    request = parse_request(
        "/v1/chat/completions", json.dumps(_chat(url)).encode(), allow_input_urls=True
    )
    names = hosts_to_resolve(request)
    check_input_hosts(names, {n: _table(n) for n in names})


@pytest.mark.parametrize("url", PRIVATE_SPELLINGS + IPV6_FORMS)
def test_every_spelling_of_a_private_address_is_refused_from_its_text(url: str) -> None:
    assert url_problem(url) is not None
    with pytest.raises(HTTPError) as caught:
        _decided(url)
    assert caught.value.status == 400


@pytest.mark.parametrize(
    ("url", "word"), [("http://[::1]/", "loopback"), ("http://[::]/", "unspecified")]
)
def test_the_ipv6_loopback_and_unspecified_addresses_are_named_as_such(url: str, word: str) -> None:
    problem = url_problem(url)
    assert problem is not None and word in problem and "IPv4" not in problem


@pytest.mark.parametrize("url", RESOLVED_PRIVATE)
def test_a_name_is_refused_when_any_address_it_resolves_to_is_not_public(url: str) -> None:
    assert url_problem(url) is None  # the text is fine: only the addresses tell
    with pytest.raises(HTTPError, match="resolve"):
        _decided(url)


@pytest.mark.parametrize("url", PUBLIC_URLS)
def test_public_hosts_in_their_canonical_spelling_pass(url: str) -> None:
    _decided(url)


def test_only_dns_names_are_handed_to_the_shell_to_resolve() -> None:
    body = {
        "model": "m",
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "image_url", "image_url": {"url": u}}
                    for u in ("http://8.8.8.8/a", "https://Example.com./b", "https://example.com/c")
                ],
            }
        ],
    }
    request = parse_request(
        "/v1/chat/completions", json.dumps(body).encode(), allow_input_urls=True
    )
    assert hosts_to_resolve(request) == {"example.com": 0}


def test_resolution_that_does_not_finish_is_a_refusal() -> None:
    with pytest.raises(HTTPError, match="did not resolve in time"):
        check_input_hosts({"example.com": 0}, None)
    with pytest.raises(BadRequest, match="does not resolve"):
        check_resolved_hosts({"example.com": 0}, {})
    assert resolved_problem("example.com", ["not-an-address"]) is not None


def test_the_system_resolver_gives_addresses_or_nothing() -> None:
    assert "127.0.0.1" in system_resolver("127.0.0.1")
    assert system_resolver("name.invalid") == []  # RFC 6761: never resolves


def test_public_means_global_unicast_only() -> None:
    import ipaddress

    assert public_address(ipaddress.ip_address("8.8.8.8"))
    for text in ("100.64.0.1", "224.0.1.1", "240.0.0.1", "0.0.0.0", "192.0.2.1", "::"):
        assert not public_address(ipaddress.ip_address(text)), text


# -- end to end: a real server, a loopback fake upstream ---------------------------


@pytest.fixture(scope="module")
def gateway(shell: str, fake_upstream: FakeProvider) -> Iterator[Server]:
    model = openai_compatible("fake-gpt", fake_upstream.base_url("ok", "openai-chat", "urls-e2e"))
    backend = provider_backend({}, models=[model])
    config = ServerConfig(api_key=KEY, allow_input_urls=True)
    with Server(App(backend, config, resolver=_table)) as server:
        yield server


def _post(gateway: Server, url: str) -> httpx.Response:
    body = _chat(url)
    body["model"] = "openai-compatible:fake-gpt"
    return httpx.post(
        gateway.url + "/v1/chat/completions",
        json=body,
        headers={"authorization": f"Bearer {KEY}"},
        timeout=30,
    )


def _sent_urls(upstream: FakeProvider) -> list[str]:
    out = []
    for record in upstream.requests:
        if "urls-e2e" in record.path:
            for message in json.loads(record.body)["messages"]:
                for part in message["content"] if isinstance(message["content"], list) else []:
                    if part.get("type") == "image_url":
                        out.append(part["image_url"]["url"])
    return out


@pytest.mark.parametrize("url", PRIVATE_SPELLINGS + IPV6_FORMS + RESOLVED_PRIVATE)
def test_the_server_refuses_them_and_the_upstream_sees_nothing(
    gateway: Server, fake_upstream: FakeProvider, url: str
) -> None:
    before = len(fake_upstream.requests)
    answer = _post(gateway, url)
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["type"] == "invalid_request_error"
    assert len(fake_upstream.requests) == before


def test_the_server_passes_a_public_url_to_the_upstream_untouched(
    gateway: Server, fake_upstream: FakeProvider
) -> None:
    answer = _post(gateway, "https://images.example.org/cat.png")
    assert answer.status_code == 200, answer.text
    assert _sent_urls(fake_upstream)[-1] == "https://images.example.org/cat.png"


def test_serve_warns_when_input_urls_go_to_an_upstream_on_this_network() -> None:
    from streamfn.core.serve._input_urls import upstream_fetch_warnings

    base_urls = {
        "openai": "http://127.0.0.1:4000/v1",
        "ollama": "http://10.0.0.5:11434",
        "anthropic": "https://api.anthropic.com",  # a provider: refused as input, not local
        "proxy": "https://llm-proxy.example.org/v1",
    }
    warnings = upstream_fetch_warnings(base_urls)
    assert len(warnings) == 2
    assert "openai=http://127.0.0.1:4000/v1" in warnings[0] and "redirect" in warnings[0]
