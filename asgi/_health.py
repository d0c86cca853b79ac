"""What ``GET /health`` answers: the server's load and its upstream deployments' health.

``/health`` answers without a key (load balancers probe it), so to anyone it
shows only the server's load and how many deployments rest; the operator (the
admin key, or anyone on a server whose clients need no key) also sees each
deployment's name, served name, model, load, rest and failure counts. Never a
key, a key's variable or an upstream's address (the backend's own
``deployments()``, read by metrics and the admin page, has the address too,
cleaned of credentials).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from streamfn.core.serve._routes import Headers, is_admin

from ._contract import Backend
from ._messages import Send, send_json

if TYPE_CHECKING:
    from ._app import App

__all__ = ["health_body", "send_health"]

#: what /health leaves out of a deployment's record
_NOT_PUBLIC = ("base_url",)


def health_body(
    backend: Backend, active: int, admitted: int, *, detailed: bool
) -> dict[str, Any]:
    """The ``/health`` body: ``active`` streams, ``admitted`` requests, and the
    deployments of a backend that has some (a ``deployments()`` method): how many
    rest, and when ``detailed`` (the operator asks) each one's record."""
    body: dict[str, Any] = {"status": "ok", "active_streams": active, "admitted": admitted}
    deployments = getattr(backend, "deployments", None)
    if deployments is not None:
        every = deployments()
        body["deployments_resting"] = sum(1 for health in every if health.cooling_for > 0)
        if not detailed:
            return body
        records = []
        for health in every:
            record = msgspec.to_builtins(health)
            for field in _NOT_PUBLIC:
                record.pop(field, None)
            records.append(record)
        body["deployments"] = records
    return body


async def send_health(app: App, headers: Headers, send: Send) -> None:
    """Answer ``GET /health``: in detail when the operator asks."""
    config = app.config
    operator = is_admin(headers, config.admin_key, open_server=not config.api_key)
    await send_json(send, 200, health_body(app.backend, app.active, app.admitted, detailed=operator))
