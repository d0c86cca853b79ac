"""``streamfn serve``: serve the local model and upstream providers over HTTP.

The server is the ASGI app `streamfn.asgi.App`, run by hypercorn on asyncio
(`streamfn.io_asyncio._serve`) or trio (`streamfn.io_trio._server`). This
module puts the pieces together: it picks the shell, its upstream client and
the local model's backend, and hands them to the app. Its help text for
users is in `serve_help`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import socket
import sys
from pathlib import Path
from typing import Any

from streamfn._extras import missing_extra

from ._command import EXIT_OK, EXIT_USAGE, Command, CommandError
from ._flags import provider_base_urls, server_tools
from ._model_dir import model_dir, require_prepared
from ._progress import progress_printer
from ._serve_flags import configure
from ._serve_help import ADMIN_KEY_ENV, API_KEY_ENV, DESCRIPTION

__all__ = ["API_KEY_ENV", "COMMAND"]


def _check(args: argparse.Namespace) -> dict[str, str]:
    """Usage errors, before anything is loaded or bound; returns the --base-url map."""
    from streamfn.core.serve._guard import is_loopback

    server_tools(args.allow_server_tools)
    base_urls = provider_base_urls(args.base_url)
    keys = _store_url(args, base_urls) is not None
    if keys and _api_key(args):
        raise CommandError(
            "client keys (--store, or [keys] in --config) and one shared --api-key (or "
            f"${API_KEY_ENV}) are two ways to let clients in: with client keys each client "
            "sends its own (streamfn keys create); drop the shared one",
            EXIT_USAGE,
        )
    if args.no_local and args.no_providers:
        raise CommandError("--no-local and --no-providers leave nothing to serve", EXIT_USAGE)
    if args.max_buffered_bytes < args.max_body_bytes:
        raise CommandError(
            "--max-buffered-bytes must be at least --max-body-bytes "
            "(else a body that is allowed could never be read)",
            EXIT_USAGE,
        )
    if not is_loopback(args.host) and not (_api_key(args) or keys) and not args.insecure_no_auth:
        raise CommandError(
            f"{args.host} is reachable from other machines and no --api-key (or "
            f"${API_KEY_ENV}) is set: anyone there could spend your provider keys. Set a "
            "token, or pass --insecure-no-auth if that is really what you want",
            EXIT_USAGE,
        )
    if "*" in args.cors_origin and (_api_key(args) or keys):
        raise CommandError(
            "--cors-origin '*' with an API key lets any web page a user of the key visits "
            "call this server with it; list the origins that may (--cors-origin "
            "https://app.example)",
            EXIT_USAGE,
        )
    if _admin_key() and _admin_key() == _api_key(args):
        raise CommandError(
            f"${ADMIN_KEY_ENV} is the clients' token too: every client could open the "
            "dashboard. Give the admin key a value of its own",
            EXIT_USAGE,
        )
    if args.config is not None and args.no_providers:
        raise CommandError("--config names upstream models; drop --no-providers", EXIT_USAGE)
    if not args.no_local:
        require_prepared(model_dir(args))
    return base_urls


def _api_key(args: argparse.Namespace) -> str | None:
    return args.api_key or os.environ.get(API_KEY_ENV) or None


def _admin_key() -> str | None:
    """The operator's key for ``/metrics`` and the dashboard: read from the environment
    only, so it never shows in the process list."""
    return os.environ.get(ADMIN_KEY_ENV) or None


def _store_url(args: argparse.Namespace, base_urls: dict[str, str]) -> str | None:
    """Where client keys are kept: ``--store URL``, else the config file's ``[keys]``
    store (``--store`` alone turns keys on there), else "" (the default store); None:
    no client keys (the one shared key, if any). Two different stores are refused."""
    # the config is read again when serving; here also to refuse it early
    named: str | None = None if args.config is None else _gateway(args.config, base_urls).store
    if args.store and named and named != args.store:
        from ._ledger_args import located

        raise CommandError(
            f"--store {located(args.store)} and {args.config}'s [keys] store "
            f"{located(named)} name two stores for one server's keys: drop one",
            EXIT_USAGE,
        )
    if args.store is None:
        return named
    return str(args.store) or named or ""  # alone: the file's store, else the default


def _open_store(url: str | None) -> Any:
    """The store of client keys and usage records, or None; its errors are the user's."""
    if url is None:
        return None
    from streamfn.ledger import StoreError, open_store

    try:
        return open_store(url or None)
    except StoreError as exc:
        raise CommandError(f"cannot open the client key store: {exc}") from exc


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


def _gateway(path: Path, base_urls: dict[str, str]) -> Any:
    """The --config file with --base-url applied; its errors are usage errors."""
    from ._serve_config import ConfigError, load_gateway_config, with_base_urls

    try:
        return with_base_urls(load_gateway_config(path), base_urls)
    except ConfigError as exc:
        raise CommandError(str(exc), EXIT_USAGE) from exc


def _backend(args: argparse.Namespace, base_urls: dict[str, str]) -> Any:
    from streamfn.asgi import ProviderBackend, RouterBackend
    from streamfn.asgi._backends import environment

    from ._serve_client import upstream_client

    providers = None
    if not args.no_providers:
        served: list[Any] = []
        registry, cooldown = True, None
        if args.config is not None:
            gateway = _gateway(args.config, base_urls)
            served, registry, cooldown = gateway.models, gateway.registry, gateway.cooldown
        environ = environment(None)
        client = upstream_client(args.shell, environ, args.max_concurrency)
        providers = ProviderBackend(
            client,
            environ,
            served=served,
            registry=registry,
            base_urls=base_urls,
            list_all=args.list_all_models,
            upstream_attempts=args.upstream_attempts,
            pause_continuations=args.pause_continuations,
            cooldown=cooldown,
        )
    local = None
    if not args.no_local:
        try:
            from ._serve_local import LocalBackend, serving_runtime

            local = LocalBackend(
                model_dir(args), runtime=serving_runtime(args.shell), progress=progress_printer()
            )
        except Exception as exc:
            raise CommandError(f"cannot load the local model: {exc} (or use --no-local)") from exc
    return RouterBackend(local, providers)


def _app(args: argparse.Namespace, backend: Any, store: Any = None) -> Any:
    from streamfn.asgi import App, ServerConfig
    from streamfn.asgi._metrics import Metrics
    from streamfn.core.serve._guard import LOOPBACK_HOSTS, is_loopback

    if is_loopback(args.host):
        allowed: tuple[str, ...] | None = (*LOOPBACK_HOSTS, *args.allowed_host)
    else:  # reachable by other names: check Host only when the operator listed names
        allowed = (*LOOPBACK_HOSTS, *args.allowed_host) if args.allowed_host else None
    return App(
        backend,
        ServerConfig(
            api_key=_api_key(args),
            admin_key=_admin_key(),
            max_body_bytes=args.max_body_bytes,
            max_buffered_bytes=args.max_buffered_bytes,
            max_unsent_bytes=args.max_unsent_bytes,
            max_concurrency=args.max_concurrency,
            max_queue=args.max_queue,
            keepalive_interval=args.keepalive,
            head_wait=args.head_wait,
            body_timeout=args.body_timeout,
            send_timeout=args.send_timeout,
            max_stream_seconds=args.max_stream_seconds,
            shutdown_grace=args.shutdown_grace,
            allowed_hosts=allowed,
            cors_origins=tuple(args.cors_origin),
            append_sources=args.append_sources,
            allow_server_tools=server_tools(args.allow_server_tools),
            allow_input_urls=args.allow_input_urls,
            default_model=args.default_model,
        ),
        observers=[Metrics(getattr(backend, "deployments", None))],
        store=store,
    )


def _serve_here(args: argparse.Namespace, sock: socket.socket, base_urls: dict[str, str]) -> int:
    """One server process on ``sock`` until SIGINT/SIGTERM."""
    backend = _backend(args, base_urls)
    store = _open_store(_store_url(args, base_urls))
    app = _app(args, backend, store)
    try:
        if args.shell == "trio":
            _serve_trio(args, app, sock)
        else:
            _serve_asyncio(args, app, sock)
    finally:
        if app.keys is not None:  # every usage record kept, then the store closed
            app.keys.close()
            store.close()
        if backend.local is not None:
            backend.local.close()
    return EXIT_OK


def _serve_asyncio(args: argparse.Namespace, app: Any, sock: socket.socket) -> None:
    from streamfn.io_asyncio import serve

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await serve(app, sock, stop, **_hosting(args))

    asyncio.run(main())


def _hosting(args: argparse.Namespace) -> dict[str, Any]:
    """The connection-level flags both shells' ``serve`` take."""
    return {
        "max_connections": args.max_connections,
        "head_timeout": args.head_timeout,
        "allow_h2c": args.allow_h2c,
    }


def _serve_trio(args: argparse.Namespace, app: Any, sock: socket.socket) -> None:
    import trio

    from streamfn.io_trio import serve

    async def main() -> None:
        stop = trio.Event()

        async def on_signal() -> None:
            with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                async for _ in signals:
                    stop.set()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(on_signal)
            await serve(app, sock, stop, **_hosting(args))
            nursery.cancel_scope.cancel()

    trio.run(main)


def _worker(args: argparse.Namespace, sock: socket.socket, base_urls: dict[str, str]) -> None:
    """A ``--workers`` child: the parent forwards the signals that stop it."""
    from ._log_output import show_library_warnings
    from ._log_words import command_line_words

    show_library_warnings()  # a spawned process: the parent's handler is not inherited
    try:
        with command_line_words():  # a spawned process starts without `main`'s setup
            sys.exit(_serve_here(args, sock, base_urls))
    except CommandError as exc:
        print(f"streamfn serve: worker: {exc}", file=sys.stderr)
        sys.exit(exc.code)


def _supervise(args: argparse.Namespace, sock: socket.socket, base_urls: dict[str, str]) -> int:
    """Start ``--workers`` processes on one socket, sharing the directories where their
    metrics and dashboard snapshots meet (removed when they have all stopped)."""
    from streamfn.asgi._board import shared_by_workers

    with shared_by_workers(args.workers):  # metrics and dashboard whole across workers
        return _run_workers(args, sock, base_urls)


def _run_workers(args: argparse.Namespace, sock: socket.socket, base_urls: dict[str, str]) -> int:
    """Start the processes; forward SIGINT/SIGTERM; wait for all."""
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


def _auth(args: argparse.Namespace, base_urls: dict[str, str]) -> str:
    """How clients get in, for the start line (names the store, never a password)."""
    url = _store_url(args, base_urls)
    if url is None:
        return "on" if _api_key(args) else "off"
    from ._ledger_args import located

    return f"client keys in {located(url)}"


def _keys_unread() -> str | None:
    """A warning when the server is started without client keys while the store the
    key commands use holds some: the newcomer who made keys and then ran a plain
    ``streamfn serve`` would otherwise serve every client as one, unlimited, with
    nothing saying why the keys are not asked for."""
    import sqlite3

    from streamfn.ledger import default_store_url

    from ._ledger_args import located

    if os.environ.get("STREAMFN_STORE", "").strip():  # it may be PostgreSQL: not asked here
        return (
            "STREAMFN_STORE names a usage store, but this server checks no client keys: "
            "add --store to check them"
        )
    path = default_store_url().removeprefix("sqlite://")
    if not os.path.isfile(path):
        return None
    # read only, as an unchanging file (no lock, no journal, no shared memory made): a
    # plain serve writes nothing there; keys a running server has not yet written back
    # to the main file may go uncounted, which only mutes this warning
    try:
        with contextlib.closing(
            sqlite3.connect(Path(path).as_uri() + "?mode=ro&immutable=1", uri=True, timeout=0.2)
        ) as db:
            (live,) = db.execute(
                "SELECT count(*) FROM ledger_keys WHERE revoked_at IS NULL"
            ).fetchone()
    except sqlite3.Error:
        return None
    if not live:
        return None
    return (
        f"{located(None)} holds {live} client key{'s' if live > 1 else ''} (streamfn keys), "
        "but this server checks none and serves every client alike: add --store to check them"
    )


def _run(args: argparse.Namespace) -> int:
    try:
        import hypercorn  # noqa: F401
    except ImportError as exc:
        raise CommandError(str(missing_extra("streamfn serve", exc, "serve"))) from exc
    from streamfn.core.serve._input_urls import upstream_fetch_warnings

    base_urls = _check(args)
    warnings = upstream_fetch_warnings(base_urls) if args.allow_input_urls else []
    store_url = _store_url(args, base_urls)
    if store_url is None:
        warnings += [unread] if (unread := _keys_unread()) else []
    else:  # a store that cannot be opened stops the server before it says it serves
        _open_store(store_url).close()
    for warning in warnings:
        print(f"streamfn serve: warning: {warning}", file=sys.stderr, flush=True)
    sock = _listen(args.host, args.port)
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    print(
        f"streamfn serve: http://{shown}:{port} (local model: {'no' if args.no_local else 'yes'}, "
        f"providers: {'no' if args.no_providers else 'yes'}, "
        f"auth: {_auth(args, base_urls)}, "
        f"dashboard: {'/admin' if _admin_key() else 'off'}, workers: {args.workers}, "
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
    configure,
    _run,
    description=DESCRIPTION,
)
