"""The server role as a sans-I/O codec: client requests in, dialect-encoded events out.

`parse_request` reads a client's request for a route into a typed call (or
raises `HTTPError` with the status and body to answer); `url_problem` says why
an input URL would be refused. The routes, the request fields, the cut-answer
rules and the guards are private modules here, used by `streamfn.asgi`.

The names are imported on first use: each dialect's server side uses this
package's private helpers (the request fields, the cut-answer rules), and the
routes use every dialect, so an eager face would make importing a dialect
import all of them, halfway through.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from streamfn._lazy_face import lazy_face as _lazy_face

if TYPE_CHECKING:
    from ._input_urls import url_problem
    from ._routes import parse_request
    from ._status import HTTPError

__all__ = ["HTTPError", "parse_request", "url_problem"]

__getattr__, __dir__ = _lazy_face(
    __name__, {"HTTPError": "._status", "parse_request": "._routes", "url_problem": "._input_urls"}
)
