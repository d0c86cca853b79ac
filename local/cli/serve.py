"""``streamfn serve``: serve the local model and upstream providers over HTTP.

OpenAI clients use ``/v1/chat/completions``, Anthropic clients
``/v1/messages``, streamfn's own proxy provider ``/v1/stream``. The server
is the ASGI app `streamfn.asgi.App`, run by hypercorn on asyncio
(`streamfn.io_asyncio.serve`) or trio (``--shell trio``, `streamfn.io_trio.server`);
this module is the composition root: it picks the shell, its upstream client
and the local model's backend, and hands them to the app. ``--workers N`` runs N such processes on one
listening socket (the server keeps no state between requests).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import socket
import sys
from pathlib import Path
from typing import Any

from .command import EXIT_OK, EXIT_USAGE, Command, CommandError
from .model_dir import add_model_dir, model_dir, require_prepared
from .progress import progress_printer

__all__ = ["API_KEY_ENV", "COMMAND"]

API_KEY_ENV = "STREAMFN_SERVER_API_KEY"

_EPILOG = f"""\
examples:
  streamfn serve
      the local model on http://127.0.0.1:8000 (plus every provider whose key is set)
  streamfn serve --host 0.0.0.0 --port 9000 --api-key "$TOKEN"
      reachable from other machines; clients must send the token
  streamfn serve --no-local --config gateway.toml --workers 4
      a gateway serving the models named in gateway.toml, in 4 processes
  streamfn serve --no-local --base-url openai=http://127.0.0.1:4000/v1
      every openai:* model through another OpenAI-compatible upstream

then, from any OpenAI client:
  curl -N http://127.0.0.1:8000/v1/chat/completions -H 'content-type: application/json' \\
    -d '{{"model": "local", "stream": true, "messages": [{{"role": "user", "content": "Hi"}}]}}'

The token may also come from ${API_KEY_ENV}. Stop with Ctrl-C or SIGTERM: open streams
get --shutdown-grace seconds to finish, then end with an error event in their dialect.
"""


def _configure(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = _EPILOG
    _add_access(parser)
    _add_sources(parser)
    _add_capacity(parser)
    _add_timeouts(parser)
    _add_web(parser)


def _add_access(parser: argparse.ArgumentParser) -> None:
    """Where the server listens and who may call it."""
    add = parser.add_argument
    add("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    add("--port", type=int, default=8000, help="port (default 8000; 0 picks a free one)")
    add("--api-key", help=f"require this bearer token (or set {API_KEY_ENV})")
    add(
        "--insecure-no-auth",
        action="store_true",
        help="allow a non-loopback --host without --api-key (anyone who reaches it spends "
        "your provider keys)",
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
        help="send every PROVIDER:* model to URL instead (repeatable)",
    )


def _add_capacity(parser: argparse.ArgumentParser) -> None:
    """How much the server takes on at once before it refuses (429, 503, 413)."""
    add = parser.add_argument
    add("--workers", type=int, default=1, metavar="N", help="server processes (default 1)")
    add(
        "--shell",
        choices=("asyncio", "trio"),
        default="asyncio",
        help="the event loop serving requests (default asyncio; trio has no "
        "--max-connections cap yet)",
    )
    add(
        "--max-concurrency",
        type=int,
        default=1024,
        help="model streams running at once (default 1024)",
    )
    add(
        "--max-queue",
        type=int,
        default=1024,
        help="requests waiting for a stream or sending their body; past it 429 (default 1024)",
    )
    add(
        "--max-connections",
        type=int,
        default=4096,
        help="open connections; past it 503 at once (default 4096)",
    )
    add(
        "--upstream-attempts",
        type=int,
        default=1,
        metavar="N",
        help="requests sent upstream per client request (default 1: a 429 or 5xx goes to "
        "the client with its Retry-After and the client retries; N multiplies its retries)",
    )
    add("--max-body-bytes", type=int, default=8 << 20, help="request body cap (default 8 MiB)")
    add(
        "--max-buffered-bytes",
        type=int,
        default=256 << 20,
        help="request bodies held in memory at once, all requests together; past it a "
        "request is a 503 with Retry-After (default 256 MiB)",
    )


def _add_timeouts(parser: argparse.ArgumentParser) -> None:
    """How long the server waits for clients and the model, and gives streams at shutdown."""
    add = parser.add_argument
    add(
        "--head-timeout",
        type=float,
        default=10.0,
        help="seconds a connection may take to send a request head (default 10)",
    )
    add(
        "--body-timeout",
        type=float,
        default=30.0,
        help="seconds a request may take to send its body (default 30)",
    )
    add(
        "--head-wait",
        type=float,
        default=1.0,
        help="seconds a stream waits for the model before sending headers and an SSE "
        "comment; errors before it are HTTP errors (default 1)",
    )
    add("--keepalive", type=float, default=15.0, help="seconds between keep-alives (default 15)")
    add(
        "--shutdown-grace",
        type=float,
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
        "(default: a 400; never loopback, private or link-local addresses, nor a "
        "provider's file host): an upstream on your network would fetch intranet URLs",
    )
    parser.add_argument(
        "--default-model",
        default=None,
        metavar="NAME",
        help="the model for front-end requests (/v1/ui/chat, /v1/agui) that name none "
        "(default: none, such a request is a 400)",
    )


def _server_tools(args: argparse.Namespace) -> tuple[str, ...]:
    from streamfn.core.server_tools import SERVER_TOOL_TYPES

    names = tuple(t.strip() for t in args.allow_server_tools.split(",") if t.strip())
    for name in names:
        if name not in SERVER_TOOL_TYPES:
            raise CommandError(
                f"--allow-server-tools: unknown type {name!r} "
                f"(known: {', '.join(SERVER_TOOL_TYPES)})",
                EXIT_USAGE,
            )
    return names


def _check(args: argparse.Namespace) -> dict[str, str]:
    """Usage errors, before anything is loaded or bound; returns the --base-url map."""
    from streamfn.core.serve.guard import is_loopback

    _server_tools(args)
    if args.no_local and args.no_providers:
        raise CommandError("--no-local and --no-providers leave nothing to serve", EXIT_USAGE)
    if args.workers < 1:
        raise CommandError("--workers must be at least 1", EXIT_USAGE)
    if args.upstream_attempts < 1:
        raise CommandError("--upstream-attempts must be at least 1", EXIT_USAGE)
    if args.max_buffered_bytes < args.max_body_bytes:
        raise CommandError(
            "--max-buffered-bytes must be at least --max-body-bytes "
            "(else a body that is allowed could never be read)",
            EXIT_USAGE,
        )
    if not is_loopback(args.host) and not _api_key(args) and not args.insecure_no_auth:
        raise CommandError(
            f"{args.host} is reachable from other machines and no --api-key (or "
            f"${API_KEY_ENV}) is set: anyone there could spend your provider keys. Set a "
            "token, or pass --insecure-no-auth if that is really what you want",
            EXIT_USAGE,
        )
    if "*" in args.cors_origin and _api_key(args):
        raise CommandError(
            "--cors-origin '*' with an API key lets any web page a user of the key visits "
            "call this server with it; list the origins that may (--cors-origin "
            "https://app.example)",
            EXIT_USAGE,
        )
    if args.config is not None and args.no_providers:
        raise CommandError("--config names upstream models; drop --no-providers", EXIT_USAGE)
    base_urls = {}
    for item in args.base_url:
        provider, sep, url = item.partition("=")
        if not sep or not provider or not url.startswith(("http://", "https://")):
            raise CommandError(
                f"--base-url {item!r}: expected PROVIDER=URL, e.g. openai=http://127.0.0.1:4000/v1",
                EXIT_USAGE,
            )
        base_urls[provider] = url.rstrip("/")
    if not args.no_local:
        require_prepared(model_dir(args))
    return base_urls


def _api_key(args: argparse.Namespace) -> str | None:
    return args.api_key or os.environ.get(API_KEY_ENV) or None


def _listen(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise CommandError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
    sock.listen(1024)
    return sock


def _backend(args: argparse.Namespace, base_urls: dict[str, str]) -> Any:
    from streamfn.asgi.backends import ProviderBackend, RouterBackend, environment

    from .serve_client import upstream_client
    from .serve_config import ConfigError, load_gateway_config

    providers = None
    if not args.no_providers:
        served: list[Any] = []
        registry = True
        if args.config is not None:
            try:
                gateway = load_gateway_config(args.config)
            except ConfigError as exc:
                raise CommandError(str(exc), EXIT_USAGE) from exc
            served, registry = gateway.models, gateway.registry
        environ = environment(None)
        client = upstream_client(args.shell, environ, args.max_concurrency)
        providers = ProviderBackend(
            client,
            environ,
            served=served,
            registry=registry,
            base_urls=base_urls,
            upstream_attempts=args.upstream_attempts,
        )
    local = None
    if not args.no_local:
        try:
            from ..serve_backend import LocalBackend

            local = LocalBackend(
                model_dir(args), runtime=_runtime(args), progress=progress_printer()
            )
        except Exception as exc:
            raise CommandError(f"cannot load the local model: {exc} (or use --no-local)") from exc
    return RouterBackend(local, providers)


def _runtime(args: argparse.Namespace) -> Any:
    """The serving loop's primitives, for the backends that relay to it."""
    if args.shell == "trio":
        from streamfn.io_trio.server import TrioRuntime

        return TrioRuntime()
    from streamfn.io_asyncio.server import AsyncioRuntime

    return AsyncioRuntime()


def _app(args: argparse.Namespace, backend: Any) -> Any:
    from streamfn.asgi import App, ServerConfig
    from streamfn.core.serve.guard import LOOPBACK_HOSTS, is_loopback

    if is_loopback(args.host):
        allowed: tuple[str, ...] | None = (*LOOPBACK_HOSTS, *args.allowed_host)
    else:  # reachable by other names: check Host only when the operator listed names
        allowed = (*LOOPBACK_HOSTS, *args.allowed_host) if args.allowed_host else None
    return App(
        backend,
        ServerConfig(
            api_key=_api_key(args),
            max_body_bytes=args.max_body_bytes,
            max_buffered_bytes=args.max_buffered_bytes,
            max_concurrency=args.max_concurrency,
            max_queue=args.max_queue,
            keepalive_interval=args.keepalive,
            head_wait=args.head_wait,
            body_timeout=args.body_timeout,
            shutdown_grace=args.shutdown_grace,
            allowed_hosts=allowed,
            cors_origins=tuple(args.cors_origin),
            append_sources=args.append_sources,
            allow_server_tools=_server_tools(args),
            allow_input_urls=args.allow_input_urls,
            default_model=args.default_model,
        ),
    )


def _serve_here(args: argparse.Namespace, sock: socket.socket, base_urls: dict[str, str]) -> int:
    """One server process on ``sock`` until SIGINT/SIGTERM."""
    backend = _backend(args, base_urls)
    app = _app(args, backend)
    try:
        if args.shell == "trio":
            _serve_trio(args, app, sock)
        else:
            _serve_asyncio(args, app, sock)
    finally:
        if backend.local is not None:
            backend.local.close()
    return EXIT_OK


def _serve_asyncio(args: argparse.Namespace, app: Any, sock: socket.socket) -> None:
    from streamfn.io_asyncio.serve import serve

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await serve(
            app,
            sock,
            stop,
            max_connections=args.max_connections,
            head_timeout=args.head_timeout,
        )

    asyncio.run(main())


def _serve_trio(args: argparse.Namespace, app: Any, sock: socket.socket) -> None:
    import trio

    from streamfn.io_trio.server import serve

    async def main() -> None:
        stop = trio.Event()

        async def on_signal() -> None:
            with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                async for _ in signals:
                    stop.set()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(on_signal)
            await serve(app, sock, stop, head_timeout=args.head_timeout)
            nursery.cancel_scope.cancel()

    trio.run(main)


def _worker(args: argparse.Namespace, sock: socket.socket, base_urls: dict[str, str]) -> None:
    """A ``--workers`` child: the parent forwards the signals that stop it."""
    try:
        sys.exit(_serve_here(args, sock, base_urls))
    except CommandError as exc:
        print(f"streamfn serve: worker: {exc}", file=sys.stderr)
        sys.exit(exc.code)


def _supervise(args: argparse.Namespace, sock: socket.socket, base_urls: dict[str, str]) -> int:
    """Start ``--workers`` processes on one socket; forward SIGINT/SIGTERM; wait for all."""
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    workers = [
        context.Process(target=_worker, args=(args, sock, base_urls), name=f"streamfn-serve-{i}")
        for i in range(args.workers)
    ]
    for worker in workers:
        worker.start()

    def forward(signum: int, frame: object) -> None:
        for worker in workers:
            if worker.pid is not None and worker.exitcode is None:
                os.kill(worker.pid, signal.SIGTERM)

    signal.signal(signal.SIGINT, forward)
    signal.signal(signal.SIGTERM, forward)
    for worker in workers:
        worker.join()
    sock.close()
    return max((w.exitcode or 0) for w in workers)


def _run(args: argparse.Namespace) -> int:
    try:
        import hypercorn  # noqa: F401
    except ImportError as exc:
        raise CommandError(
            f"streamfn serve needs hypercorn ({exc}); install it with: pip install 'streamfn[serve]'"
        ) from exc
    base_urls = _check(args)
    sock = _listen(args.host, args.port)
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    print(
        f"streamfn serve: http://{shown}:{port} (local model: {'no' if args.no_local else 'yes'}, "
        f"providers: {'no' if args.no_providers else 'yes'}, "
        f"auth: {'on' if _api_key(args) else 'off'}, workers: {args.workers}, "
        f"shell: {args.shell})",
        file=sys.stderr,
        flush=True,
    )
    if args.workers > 1:
        return _supervise(args, sock, base_urls)
    return _serve_here(args, sock, base_urls)


COMMAND = Command(
    "serve",
    "serve models over HTTP to OpenAI and Anthropic clients",
    _configure,
    _run,
    description=(__doc__ or "").replace("``", ""),
)
