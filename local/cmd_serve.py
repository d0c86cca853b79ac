"""``streamfn serve``: serve the local model and upstream providers over HTTP.

OpenAI clients use ``/v1/chat/completions``, Anthropic clients
``/v1/messages``, streamfn's own proxy provider ``/v1/stream``. The server
is the ASGI app in `streamfn.io_asyncio.server`, run by hypercorn.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys

from .cli import EXIT_OK, EXIT_USAGE, Command, CommandError, _progress_printer, register_command

API_KEY_ENV = "STREAMFN_SERVER_API_KEY"

_EPILOG = f"""\
examples:
  streamfn serve
      the local model on http://127.0.0.1:8000 (plus every provider whose key is set)
  streamfn serve --host 0.0.0.0 --port 9000 --api-key "$TOKEN"
      reachable from other machines; clients must send the token
  streamfn serve --no-local
      a gateway to upstream providers only (keys from the environment)

then, from any OpenAI client:
  curl -N http://127.0.0.1:8000/v1/chat/completions -H 'content-type: application/json' \\
    -d '{{"model": "local", "stream": true, "messages": [{{"role": "user", "content": "Hi"}}]}}'

The token may also come from ${API_KEY_ENV}. Stop with Ctrl-C: open streams get
--shutdown-grace seconds to finish.
"""


def _configure(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = _EPILOG
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    parser.add_argument("--api-key", help=f"require this bearer token (or set {API_KEY_ENV})")
    parser.add_argument("--no-local", action="store_true", help="do not load the local model")
    parser.add_argument("--no-providers", action="store_true", help="serve only the local model")
    parser.add_argument("--model-dir", help="a prepared CTranslate2 model directory")
    parser.add_argument("--max-concurrency", type=int, default=16, help="open streams (default 16)")
    parser.add_argument(
        "--max-body-bytes", type=int, default=8 << 20, help="request body cap (default 8 MiB)"
    )
    parser.add_argument(
        "--keepalive", type=float, default=15.0, help="seconds between keep-alives (default 15)"
    )
    parser.add_argument(
        "--shutdown-grace", type=float, default=10.0, help="seconds open streams get at shutdown"
    )
    parser.add_argument(
        "--append-sources",
        action="store_true",
        help="show web-search sources to OpenAI and agent clients as a last text block",
    )


def _run(args: argparse.Namespace) -> int:
    try:
        import hypercorn.asyncio
        import hypercorn.config
    except ImportError as exc:
        raise CommandError(
            f"streamfn serve needs hypercorn ({exc}); install it with: pip install 'streamfn[serve]'"
        ) from exc
    from streamfn.io_asyncio.backends import LocalBackend, ProviderBackend, RouterBackend
    from streamfn.io_asyncio.server import App, ServerConfig

    if args.no_local and args.no_providers:
        raise CommandError("--no-local and --no-providers leave nothing to serve", EXIT_USAGE)
    api_key = args.api_key or os.environ.get(API_KEY_ENV) or None
    if args.host not in ("127.0.0.1", "localhost", "::1") and not api_key:
        print(
            f"streamfn serve: warning: {args.host} is reachable from other machines and no "
            f"--api-key/{API_KEY_ENV} is set: anyone there can use your provider keys",
            file=sys.stderr,
        )
    local = None
    if not args.no_local:
        try:
            local = LocalBackend(args.model_dir, progress=_progress_printer())
        except Exception as exc:
            raise CommandError(f"cannot load the local model: {exc} (or use --no-local)") from exc
    providers = None if args.no_providers else ProviderBackend()
    app = App(
        RouterBackend(local, providers),
        ServerConfig(
            api_key=api_key,
            max_body_bytes=args.max_body_bytes,
            max_concurrency=args.max_concurrency,
            keepalive_interval=args.keepalive,
            shutdown_grace=args.shutdown_grace,
            append_sources=args.append_sources,
        ),
    )
    config = hypercorn.config.Config()
    host = f"[{args.host}]" if ":" in args.host else args.host
    config.bind = [f"{host}:{args.port}"]
    config.graceful_timeout = args.shutdown_grace + 3
    config.accesslog = None
    print(
        f"streamfn serve: http://{host}:{args.port} (local model: {'yes' if local else 'no'}, "
        f"providers: {'yes' if providers else 'no'}, auth: {'on' if api_key else 'off'})",
        file=sys.stderr,
    )

    async def serve() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await hypercorn.asyncio.serve(app, config, shutdown_trigger=stop.wait)  # type: ignore[arg-type]

    try:
        asyncio.run(serve())
    except OSError as exc:
        raise CommandError(f"cannot listen on {host}:{args.port}: {exc.strerror or exc}") from exc
    finally:
        if local is not None:
            local.close()
    return EXIT_OK


register_command(
    Command(
        "serve",
        "serve models over HTTP to OpenAI and Anthropic clients",
        _configure,
        _run,
        description=(__doc__ or "").replace("``", ""),
    )
)
