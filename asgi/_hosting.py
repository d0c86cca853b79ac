"""How both shells hand the `App` to hypercorn: its configuration, the listening
socket, and the shutdown order (hypercorn stops accepting when ``stop`` is set
while the app's own shutdown runs beside it; hypercorn waits a little longer
than the app's grace for the connections to close)."""

from __future__ import annotations

import importlib
import socket
from typing import Any

from streamfn._extras import missing_extra

from ._app import App
from ._runtime import Flag

__all__ = ["hypercorn_arguments", "hypercorn_worker"]


def hypercorn_worker(shell: str, what: str) -> Any:
    """hypercorn's ``worker_serve`` for ``shell`` (``"asyncio"`` or ``"trio"``); without
    hypercorn, the error says ``what`` needs the [serve] extra."""
    try:
        return importlib.import_module(f"hypercorn.{shell}.run").worker_serve
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] != "hypercorn":
            raise
        raise missing_extra(what, exc, "serve") from None


def hypercorn_arguments(
    app: App,
    sock: socket.socket,
    stop: Flag,
    *,
    head_timeout: float,
    log_errors: bool,
    allow_h2c: bool = False,
) -> tuple[Any, Any, dict[str, Any]]:
    """``(app, config, keywords)`` for a hypercorn ``worker_serve`` (asyncio's or trio's).

    ``head_timeout`` bounds how long a request head may take (hypercorn's
    keep-alive timer runs until a whole head has arrived), and as long an idle
    connection. A client that takes no response bytes for the app's
    ``send_timeout`` loses its connection. Cleartext HTTP/2 is refused unless ``allow_h2c``; a peer that
    closed its side frees its connection at once (`streamfn.asgi._connections`).
    """
    import hypercorn.config
    from hypercorn.config import Sockets
    from hypercorn.utils import wrap_app

    from ._connections import ConnectionRules, apply, install

    install()
    config = hypercorn.config.Config()
    send_timeout = app.config.send_timeout
    apply(
        config,
        ConnectionRules(allow_h2c=allow_h2c, send_timeout=send_timeout, runtime=app.runtime),
    )
    config.keep_alive_timeout = head_timeout
    # a WebSocket message is a request body: the same cap (the default is 16 MiB)
    config.websocket_max_message_size = app.config.max_body_bytes
    config.graceful_timeout = app.config.shutdown_grace + 3.0
    config.accesslog = None
    if not log_errors:
        config.errorlog = None

    async def trigger() -> None:
        await stop.wait()
        app.begin_shutdown()

    sockets = Sockets(secure_sockets=[], insecure_sockets=[sock], quic_sockets=[])
    wrapped = wrap_app(app, config.wsgi_max_body_size, "asgi")  # type: ignore[arg-type]
    return wrapped, config, {"sockets": sockets, "shutdown_trigger": trigger}
