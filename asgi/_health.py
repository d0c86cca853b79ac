"""What ``GET /health`` answers: the server's load and its upstream deployments' health.

``/health`` answers without a key (load balancers probe it), so it shows what an
operator's probe needs and nothing an outsider could use: each deployment's
name, served name, model, load, rest and failure counts, never a key, a key's
variable or an upstream's address (the backend's own ``deployments()``, read by
metrics and the admin page, has the address too, cleaned of credentials).
"""

from __future__ import annotations

from typing import Any

import msgspec

from ._contract import Backend

__all__ = ["health_body"]

#: what /health leaves out of a deployment's record
_NOT_PUBLIC = ("base_url",)


def health_body(backend: Backend, active: int, admitted: int) -> dict[str, Any]:
    """The ``/health`` body: ``active`` streams, ``admitted`` requests, and the
    deployments of a backend that has some (a ``deployments()`` method)."""
    body: dict[str, Any] = {"status": "ok", "active_streams": active, "admitted": admitted}
    deployments = getattr(backend, "deployments", None)
    if deployments is not None:
        records = []
        for health in deployments():
            record = msgspec.to_builtins(health)
            for field in _NOT_PUBLIC:
                record.pop(field, None)
            records.append(record)
        body["deployments"] = records
    return body
