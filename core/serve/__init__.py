"""The server role as a sans-I/O codec: client requests in, dialect-encoded events out.

`parse_request` reads a client's request for a route into a typed call (or
raises `HTTPError` with the status and body to answer); `url_problem` says why
an input URL would be refused. The routes, the status mapping and the guards are
private modules here, used by `streamfn.asgi`; what every dialect's server side
shares (the request fields, the cut-answer rules) lives with the dialects, which
this package imports and which never import it.
"""

from ._input_urls import url_problem
from ._routes import parse_request
from ._status import HTTPError

__all__ = ["HTTPError", "parse_request", "url_problem"]
