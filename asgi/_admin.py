"""The operator's dashboard (``GET /admin``) and its JSON routes (``/admin/api/...``).

Served by the App before any dialect route, and only when the server has an admin
key (`ServerConfig.admin_key`): without one ``/admin`` is a 404 like any unknown path.

The trust boundary: the admin key opens these routes and nothing else does: no key
is a 401, any other key (a client key, the server's client token) a 403, compared in
constant time as for ``/metrics``. The page sends it as ``Authorization: Bearer`` on
each request (keeping it in the tab's sessionStorage), never as a cookie, so a
hostile page cannot make a browser send it (no CSRF). No CORS header is ever sent
here and a request from another origin is refused; the Host rule of the dialect
routes holds (DNS rebinding). The page itself (one HTML, one JS, one CSS file, all
shipped in this package, nothing from a network) carries no data: it runs under a
strict Content-Security-Policy with no inline script, may not be framed, and is
never cached. What it shows that came from a client or an upstream (model names,
key names, error messages) it inserts as text, never as HTML.

Under ``streamfn serve --workers N`` each worker holds its own streams in flight and
deployments' rests: they meet on the supervisor's board (`streamfn.asgi._board`), so
any worker answers whole. The recent errors come from the usage store when there is
one (every worker's, across restarts), else from this worker's memory.

The playground streams a prompt through the App's own pipeline of our events (the
same backend, limits and observers as any client), recorded as the admin's use.
"""

from __future__ import annotations

import logging
import math
import os
import time
from collections.abc import Awaitable, Callable
from importlib import resources
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import parse_qs

from streamfn.core.serve import HTTPError
from streamfn.core.serve._guard import header, host_allowed, is_json
from streamfn.core.serve._routes import authenticate_admin
from streamfn.core.serve._served import NATIVE
from streamfn.core.serve._status import OPENAI, error_response, json_body

from ._admin_views import (
    RecentErrors,
    deployments_view,
    flights_view,
    merged_deployments,
    merged_flights,
    stored_errors,
    usage_view,
)
from ._board import Snapshot, board_from_environment, capped
from ._messages import Message, Receive, Send, adding_headers
from ._observe import calling_as

if TYPE_CHECKING:
    from ._app import App

__all__ = ["ADMIN_KEY_ID", "Admin", "is_admin_path"]

log = logging.getLogger("streamfn")

#: the key id (and name) the playground's requests are recorded under
ADMIN_KEY_ID: Final = "admin"
PLAYGROUND: Final = "/admin/api/playground"
#: every answer under /admin: no script but the page's own file, no framing, no cache
SECURITY_HEADERS: Final = [
    (
        b"content-security-policy",
        b"default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; "
        b"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; "
        b"frame-ancestors 'none'",
    ),
    (b"x-frame-options", b"DENY"),
    (b"cache-control", b"no-store"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
]
#: the page's files: path -> (file in this package, content type)
_ASSETS: Final = {
    "/admin": ("admin.html", b"text/html; charset=utf-8"),
    "/admin/admin.js": ("admin.js", b"text/javascript; charset=utf-8"),
    "/admin/admin.css": ("admin.css", b"text/css; charset=utf-8"),
}
#: seconds between a worker's looks at the board (and so between its snapshots)
PUBLISH_EVERY: Final = 1.0
#: how long an answer waits for workers just woken to write their first snapshot
WAKE_WAIT: Final = 2.0


def is_admin_path(path: str) -> bool:
    return path == "/admin" or path.startswith("/admin/")


class Admin:
    """The admin routes of one App, and the recent errors they show (an observer of
    the App's flights from the start)."""

    def __init__(self, app: App) -> None:
        self.app = app
        self.errors = RecentErrors()
        app.flights.observers.append(self.errors)
        self.board = board_from_environment(os.getpid())  # None: one process
        self._files: dict[str, bytes] = {}
        self._views: dict[str, Callable[[Message], Awaitable[Any]]] = {
            "/admin/api/flights": self._flights,
            "/admin/api/usage": self._usage,
            "/admin/api/deployments": self._deployments,
            "/admin/api/errors": self._errors,
            "/admin/api/models": self._models,
        }

    def start(self) -> None:
        """At the server's start: under ``--workers``, keep this worker's snapshot on the
        board while the dashboard is looked at."""
        if self.board is not None:
            self.app.runtime.spawn_system(self._publishing)

    async def _publishing(self) -> None:
        board, runtime, never = self.board, self.app.runtime, self.app.runtime.flag()
        assert board is not None
        failed = False
        try:
            while True:
                await runtime.wait(never, PUBLISH_EVERY)
                try:
                    if board.wanted(time.time()):  # one stat a second while nobody looks
                        await runtime.to_thread(board.publish, self._snapshot())
                    failed = False
                except Exception:
                    if not failed:  # once per spell of failures, not once a second
                        log.exception("the dashboard's board could not be written")
                    failed = True
        finally:  # the server stops: this worker's streams leave the others' view at once
            board.withdraw()

    def _snapshot(self, deployments: bool = True) -> Snapshot:
        """This worker's view now (taken on the loop: the flights change there)."""
        rows = flights_view(self.app.flights.running.values(), self.app.runtime.clock())
        report = deployments_view(self.app.backend) if deployments else {}
        return capped(os.getpid(), time.time(), rows, report)

    async def _others(self) -> list[Snapshot]:
        """The other workers' snapshots; waking them (nobody looked for a while) waits
        up to `WAKE_WAIT` for their first."""
        board, runtime = self.board, self.app.runtime
        if board is None:
            return []
        now = time.time
        awake = await runtime.to_thread(board.ask, now())
        others = await runtime.to_thread(board.others, now())
        waited, never = 0.0, runtime.flag()
        while not awake and len(others) + 1 < board.workers and waited < WAKE_WAIT:
            await runtime.wait(never, 0.1)
            waited += 0.1
            others = await runtime.to_thread(board.others, now())
        return others

    async def serve(self, scope: Message, receive: Receive, send: Send) -> None:
        """Answer one request under /admin; every refusal is a JSON error."""
        send = adding_headers(send, SECURITY_HEADERS)
        try:
            await self._route(scope, receive, send)
        except HTTPError as exc:
            status, headers, body = error_response(OPENAI, exc)
            await send({"type": "http.response.start", "status": status, "headers": headers})
            await send({"type": "http.response.body", "body": body})

    async def _route(self, scope: Message, receive: Receive, send: Send) -> None:
        path, method = scope.get("path", ""), scope.get("method", "GET")
        headers = list(scope.get("headers", []))
        self._check_origin(headers)
        asset = _ASSETS.get(path)
        view = self._views.get(path)
        if asset is not None or view is not None:
            _allow(method, "GET")
            if asset is not None:
                await _answer(send, 200, self._file(asset[0]), asset[1])
                return
        elif path == PLAYGROUND:
            _allow(method, "POST")
        else:
            raise HTTPError(404, "not_found", f"no admin route at {path}")
        authenticate_admin(headers, self.app.config.admin_key, open_server=False)
        if view is not None:
            body = json_body(await view(scope))
            await _answer(send, 200, body, b"application/json")
            return
        if not is_json(headers):
            raise HTTPError(415, "invalid_request", "send the prompt as application/json")
        with calling_as(key_id=ADMIN_KEY_ID, key_name=ADMIN_KEY_ID, route=PLAYGROUND):
            await self.app.complete(NATIVE, receive, send)

    def _check_origin(self, headers: list[tuple[bytes, bytes]]) -> None:
        """The Host rule of every route, and no other site's page: these routes send
        no CORS headers, and a request a page of another origin sends is refused."""
        if not host_allowed(headers, self.app.config.allowed_hosts):
            raise HTTPError(400, "invalid_request", "this server does not answer to that Host")
        origin, host = header(headers, b"origin"), header(headers, b"host")
        if origin is not None and origin.partition(b"://")[2] != host:
            raise HTTPError(403, "forbidden", "the admin routes answer only their own page")

    def _file(self, name: str) -> bytes:
        if name not in self._files:
            self._files[name] = resources.files("streamfn.asgi").joinpath(name).read_bytes()
        return self._files[name]

    # -- the views ------------------------------------------------------------------
    async def _flights(self, scope: Message) -> Any:
        others = await self._others()
        own = self._snapshot(deployments=False)
        return merged_flights(own, others, self.board.workers if self.board else 1)

    async def _usage(self, scope: Message) -> Any:
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        now = float(self.app.stamps.unix_time())
        bucket = query.get("bucket", ["hour"])[0]
        if bucket not in ("hour", "day"):
            raise HTTPError(400, "invalid_request", "bucket must be hour or day")
        try:
            since = float(query.get("since", [str(now - 86400)])[0])
        except ValueError:
            since = math.nan
        store = self.app.store
        return await self.app.runtime.to_thread(
            lambda: usage_view(store, now=now, since=since, bucket=bucket)
        )

    async def _deployments(self, scope: Message) -> Any:
        others = await self._others()
        return merged_deployments(self._snapshot(), others)

    async def _errors(self, scope: Message) -> Any:
        """``whole``: every worker's errors, from the store; else this worker's own."""
        store, seen = self.app.store, self.errors.rows()
        if store is None:
            return {"whole": False, "errors": seen}

        def read() -> list[dict[str, Any]]:
            names = {key.id: key.name for key in store.list_keys()}
            return stored_errors(store.failures(limit=self.errors.keep), names, seen)

        return {"whole": True, "errors": await self.app.runtime.to_thread(read)}

    async def _models(self, scope: Message) -> Any:
        return self.app.backend.list_models()


def _allow(method: str, allowed: str) -> None:
    if method != allowed:
        raise HTTPError(
            405,
            "invalid_request",
            f"this admin route answers {allowed}, not {method}",
            headers=[(b"allow", allowed.encode())],
        )


async def _answer(send: Send, status: int, body: bytes, content_type: bytes) -> None:
    headers = [(b"content-type", content_type)]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
