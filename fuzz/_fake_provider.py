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
(`streamfn.fuzz._pytest_plugin`, the ``fake_provider`` fixture) imports it alone.

This module routes requests; the bodies are in `fake_bodies`, the faults in
`fake_faults`, the loopback HTTP in `raw_http`.
"""

from __future__ import annotations

import json
import socket
import ssl
from collections import defaultdict
from collections.abc import Callable
from typing import Final

from ._fake_bodies import (
    ANTHROPIC_BODY,
    OPENAI_BODY,
    UNFINISHED,
    WIRE_FORMATS,
    WORDS,
    WRONG_WORDS,
    oversized_unit,
)
from ._fake_faults import FAULTS, Exchange, reply
from ._raw_http import ConnectProxy, Request, ThreadedServer, read_request

__all__ = [
    "ANTHROPIC_BODY",
    "FAULTS",
    "OPENAI_BODY",
    "UNFINISHED",
    "WIRE_FORMATS",
    "WRONG_WORDS",
    "ConnectProxy",
    "FakeProvider",
    "Request",
    "oversized_unit",
    "read_request",
]


#: the token counting endpoints, by the end of their path, and how each answers a count
COUNT_ANSWERS: Final[dict[str, Callable[[int], dict[str, object]]]] = {
    "/messages/count_tokens": lambda n: {"input_tokens": n},  # Anthropic
    "/responses/input_tokens": lambda n: {"object": "response.input_tokens", "input_tokens": n},
    ":countTokens": lambda n: {"totalTokens": n},  # Gemini
    "/count-tokens": lambda n: {"inputTokens": n},  # Bedrock
}


def count_answer(path: str, body: bytes) -> bytes | None:
    """The fake's answer to a token count request (None: ``path`` asks for none): a
    quarter of the request body's bytes, so a longer prompt counts more."""
    for ending, answer in COUNT_ANSWERS.items():
        if path.split("?", 1)[0].endswith(ending):
            return json.dumps(answer(max(1, len(body) // 4))).encode()
    return None


class FakeProvider(ThreadedServer):
    """The fake provider. ``requests`` records every request (method, path, headers, body).

    The built-in wire formats also answer the providers' token counting endpoints
    (`count_answer`); a body given to `serve` or `register_body` is answered as given.
    """

    def __init__(self, tls: ssl.SSLContext | None = None, stall: float = 5.0) -> None:
        super().__init__(tls)
        self.stall = stall
        self.requests: list[Request] = []
        self._hits: dict[str, int] = defaultdict(int)
        self._bodies: dict[str, tuple[bytes, str]] = {
            name: (build(WORDS), ctype) for name, (build, ctype) in WIRE_FORMATS.items()
        }
        self._bodies["anthropic"] = (ANTHROPIC_BODY, "text/event-stream")
        self._built_in = frozenset(self._bodies)
        self._wrong = {name: build(WRONG_WORDS) for name, (build, _) in WIRE_FORMATS.items()}
        self.on_request: Callable[[Request], None] | None = None
        self._served = 0
        #: what the "paced" fault sent, by body name: (events sent, whether the client
        #: closed the connection before the last one)
        self.paced: dict[str, tuple[int, bool]] = {}

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
            counted = (
                count_answer(request.path, request.body) if provider in self._built_in else None
            )
            if counted is not None:
                keep = self.respond_count(sock, fault, provider, hit, counted)
            else:
                keep = self.respond(sock, fault, provider, hit)
            if not keep:
                return

    def respond(self, sock: socket.socket, fault: str, provider: str, hit: int) -> bool:
        """Write the response; False when the connection must end afterwards."""
        body, ctype = self._bodies[provider]
        return self._reply(sock, fault, provider, hit, body, ctype, self._wrong.get(provider, body))

    def respond_count(
        self, sock: socket.socket, fault: str, provider: str, hit: int, counted: bytes
    ) -> bool:
        """Write a token count's answer (``counted``), with the fault asked for."""
        return self._reply(sock, fault, provider, hit, counted, "application/json", counted)

    def _reply(
        self,
        sock: socket.socket,
        fault: str,
        provider: str,
        hit: int,
        body: bytes,
        ctype: str,
        wrong: bytes,
    ) -> bool:
        exchange = Exchange(
            sock=sock,
            provider=provider,
            body=body,
            ctype=ctype,
            hit=hit,
            wrong=wrong,
            url=self.url,
            stall=self.stall,
            wait=self.wait,
            record=self.paced,
        )
        return reply(fault, exchange)
