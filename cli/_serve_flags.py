"""The flags of ``streamfn serve``, grouped as its ``--help`` shows them.

Kept apart from `serve`, which puts the server together from what they say, so
each reads whole; the users' prose around them is in `serve_help`.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ._flags import at_least, port, seconds, size
from ._model_dir import add_model_dir
from ._serve_help import API_KEY_ENV, EPILOG, LIST_ALL_MODELS_HELP

__all__ = ["configure"]


def configure(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = EPILOG
    _add_access(parser)
    _add_sources(parser)
    _add_capacity(parser)
    _add_memory(parser)
    _add_timeouts(parser)
    _add_web(parser)


def _add_access(parser: argparse.ArgumentParser) -> None:
    """Where the server listens and who may call it."""
    add = parser.add_argument
    add(
        "--host", default="127.0.0.1", metavar="ADDRESS", help="address to bind (default 127.0.0.1)"
    )
    add(
        "--port",
        type=port,
        default=8000,
        metavar="PORT",
        help="port (default 8000; 0 picks a free one)",
    )
    add("--api-key", metavar="TOKEN", help=f"require this bearer token (or set {API_KEY_ENV})")
    add(
        "--store",
        nargs="?",
        const="",
        metavar="URL",
        help="client keys: each client sends its own key (streamfn keys create), limited and "
        "recorded in this store (sqlite:///path.db or postgresql://...; alone: "
        "the --config file's [keys] store, else $STREAMFN_STORE, else the default SQLite "
        "file); replaces --api-key",
    )
    add(
        "--insecure-no-auth",
        action="store_true",
        help="allow a non-loopback --host without --api-key (anyone who reaches it spends "
        "your provider keys)",
    )
    add(
        "--allow-h2c",
        action="store_true",
        help="serve cleartext HTTP/2 (prior knowledge or Upgrade: h2c), bounded by "
        "--head-timeout like HTTP/1.1 (default: refused, asking the client for HTTP/1.1)",
    )


def _add_sources(parser: argparse.ArgumentParser) -> None:
    """What the server serves: the local model, upstream providers, a gateway file."""
    add = parser.add_argument
    add("--no-local", action="store_true", help="do not load the local model")
    add("--no-providers", action="store_true", help="serve only the local model")
    add_model_dir(parser)
    add("--config", type=Path, metavar="FILE", help="TOML list of served upstream models")
    add(
        "--base-url",
        action="append",
        default=[],
        metavar="PROVIDER=URL",
        help="send every PROVIDER:* model to URL instead, --config models of PROVIDER too "
        "(repeatable)",
    )
    add("--list-all-models", action="store_true", help=LIST_ALL_MODELS_HELP)


def _add_capacity(parser: argparse.ArgumentParser) -> None:
    """How much the server takes on at once before it refuses (429, 503, 413)."""
    add = parser.add_argument
    add("--workers", type=at_least(1), default=1, metavar="N", help="server processes (default 1)")
    add(
        "--shell",
        choices=("asyncio", "trio"),
        default="asyncio",
        help="the event loop serving requests (default asyncio)",
    )
    add(
        "--max-concurrency",
        metavar="N",
        type=at_least(1),
        default=1024,
        help="model streams running at once (default 1024)",
    )
    add(
        "--max-queue",
        metavar="N",
        type=at_least(0),
        default=1024,
        help="requests waiting for a stream or sending their body; past it 429 (default 1024)",
    )
    add(
        "--max-connections",
        metavar="N",
        type=at_least(1),
        default=4096,
        help="open connections; past it 503 at once (default 4096)",
    )
    add(
        "--upstream-attempts",
        type=at_least(1),
        default=1,
        metavar="N",
        help="requests sent upstream per client request (default 1: a 429 or 5xx goes to "
        "the client with its Retry-After and the client retries; N multiplies its retries)",
    )
    add(
        "--pause-continuations",
        type=at_least(0),
        default=5,
        metavar="N",
        help="times a turn the provider paused (Anthropic pause_turn) is continued, each one "
        "more upstream request billing the whole conversation again (default 5; 0: the "
        "client sees the pause)",
    )


def _add_memory(parser: argparse.ArgumentParser) -> None:
    """How many bytes the server holds for requests and unsent answers before it refuses."""
    add = parser.add_argument
    add(
        "--max-body-bytes",
        type=size(1),
        default=8 << 20,
        metavar="SIZE",
        help="request body cap, in bytes or KiB, MiB, GiB: 8MiB (default 8 MiB)",
    )
    add(
        "--max-buffered-bytes",
        metavar="SIZE",
        type=size(1),
        default=256 << 20,
        help="requests held in memory at once, all together (each body, then its parsed "
        "form until it ends); past it a request is a 503 with Retry-After (default 256 MiB)",
    )
    add(
        "--max-unsent-bytes",
        type=size(1),
        metavar="SIZE",
        default=1 << 20,
        help="events waiting for one client that reads slowly; past it the model's stream "
        "waits for the client (default 1 MiB)",
    )


def _add_timeouts(parser: argparse.ArgumentParser) -> None:
    """How long the server waits for clients and the model, and gives streams at shutdown."""
    add = parser.add_argument
    add(
        "--head-timeout",
        metavar="SECONDS",
        type=seconds(zero=False),
        default=10.0,
        help="seconds a connection may take to send a request head (default 10)",
    )
    add(
        "--body-timeout",
        metavar="SECONDS",
        type=seconds(zero=False),
        default=30.0,
        help="seconds a request may take to send its body (default 30)",
    )
    add(
        "--send-timeout",
        metavar="SECONDS",
        type=seconds(zero=False),
        default=30.0,
        help="seconds a client may take no response bytes while the server waits to write; "
        "then its connection is reset and its model call cancelled (default 30)",
    )
    add(
        "--max-stream-seconds",
        metavar="SECONDS",
        type=seconds(zero=False, most=86_400.0),
        default=3600.0,
        help="seconds a request may run from being read to its end, however its upstream "
        "paces it; then its stream ends with an error naming this flag (default 3600: "
        "long enough for a reasoning model's longest answers; at most 86400, as a crashed "
        "worker's client-key reservations hold their budget this long)",
    )
    add(
        "--head-wait",
        metavar="SECONDS",
        type=seconds(zero=True),
        default=1.0,
        help="seconds a stream waits for the model before sending headers and an SSE "
        "comment; errors before it are HTTP errors (default 1)",
    )
    add(
        "--keepalive",
        type=seconds(zero=False),
        default=15.0,
        metavar="SECONDS",
        help="seconds between keep-alives (default 15)",
    )
    add(
        "--shutdown-grace",
        metavar="SECONDS",
        type=seconds(zero=True),
        default=10.0,
        help="seconds open streams get at shutdown (default 10)",
    )


def _add_web(parser: argparse.ArgumentParser) -> None:
    """Host names, browser origins and sources as web clients see them."""
    add = parser.add_argument
    add(
        "--allowed-host",
        action="append",
        default=[],
        metavar="NAME",
        help="also answer to this Host name (loopback binds answer only to loopback names)",
    )
    add(
        "--cors-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="let web pages from ORIGIN call the server (repeatable; '*' for any)",
    )
    parser.add_argument(
        "--append-sources",
        action="store_true",
        help="show web-search sources to OpenAI and agent clients as a last text block",
    )
    parser.add_argument(
        "--allow-server-tools",
        default="",
        metavar="TYPES",
        help="let clients enable these provider-run tools, comma-separated (web_search, "
        "code_execution); they are billed to the server's keys (default: none, a 400)",
    )
    parser.add_argument(
        "--allow-input-urls",
        action="store_true",
        help="pass clients' image and document URLs to the upstream, which fetches them "
        "(default: a 400). Only public hosts pass: canonical public IP literals, or DNS "
        "names whose every address (resolved by this server) is public; never metadata, "
        "wildcard-DNS or provider file hosts. The upstream resolves the name again and "
        "may follow redirects, so do not enable this for an upstream on your network "
        "unless it refuses private addresses itself",
    )
    parser.add_argument(
        "--default-model",
        default=None,
        metavar="NAME",
        help="the model for front-end requests (/v1/ui/chat, /v1/agui) that name none "
        "(default: none, such a request is a 400)",
    )
