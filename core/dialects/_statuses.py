"""What HTTP status an error before any output becomes: one table for every route.

The server's error mapping (`streamfn.core.serve`) and the encoders that carry a
status in their own error frame (the agent events' problem details) read the same
table, so a client sees one status for one kind of failure whatever route it used.
"""

from __future__ import annotations

from typing import Final

from .._events import ErrorKind

__all__ = ["OWN_STATUSES", "STATUS_FOR_KIND"]

#: what HTTP status an error before any output becomes, by kind
STATUS_FOR_KIND: Final = {
    ErrorKind.THROTTLED: 429,
    ErrorKind.CONTEXT_OVERFLOW: 400,
    ErrorKind.INVALID_REQUEST: 400,
    ErrorKind.CONTENT_FILTER: 400,
    ErrorKind.AUTH: 502,  # the upstream rejected *our* key: not the client's fault
    ErrorKind.NETWORK: 502,
    ErrorKind.PROTOCOL: 502,
    ErrorKind.LIMIT: 502,
    ErrorKind.BUDGET: 403,  # a spending cap reached: the caller's budget, not retried
}
#: statuses a backend error keeps as they are (not the client's nor the upstream's fault)
OWN_STATUSES: Final = frozenset({404, 503})
