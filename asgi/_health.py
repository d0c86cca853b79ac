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

from typing import Any

import msgspec

from ._contract import Backend

__all__ = ["health_body"]

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
