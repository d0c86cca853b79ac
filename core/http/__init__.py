"""HTTP/1.1 for provider calls, sans I/O (needs h11): the exchange, the tunnel, the
steps a shell answers, and the client half every shell shares.

- `exchange`: one request/response on a socket (`Exchange`), h11 underneath;
- `tunnel`: the CONNECT that opens an HTTPS_PROXY tunnel (`ConnectTunnel`);
- `steps` and `driver`: a stream's life as I/O steps a shell performs;
- `pool` and `client_base`: the keep-alive pool and the async clients' loop;
- `target`, `proxy_env`, `content_coding`: URLs, proxies, Content-Encoding.
"""

from ..credentials import with_credentials  # the old streamfn.core.http11 exported it
from .client_base import Ambient, ClientBase, ClientSettings
from .driver import TAIL_GRACE, drive, wire_headers
from .exchange import MAX_TAIL_BYTES, Exchange
from .pool import Pool, PooledConnection
from .steps import (
    EXPIRED,
    Answer,
    Connect,
    Emit,
    Expired,
    PoolKey,
    Receive,
    Release,
    Send,
    Sleep,
    Step,
)
from .target import (
    MAX_HEADER_BYTES,
    USER_AGENT,
    Target,
    connect_error,
    connect_timeout_error,
    parse_target,
)
from .tunnel import ConnectTunnel, TunnelError

__all__ = [
    "EXPIRED",
    "MAX_HEADER_BYTES",
    "MAX_TAIL_BYTES",
    "TAIL_GRACE",
    "USER_AGENT",
    "Ambient",
    "Answer",
    "ClientBase",
    "ClientSettings",
    "Connect",
    "ConnectTunnel",
    "Emit",
    "Exchange",
    "Expired",
    "Pool",
    "PoolKey",
    "PooledConnection",
    "Receive",
    "Release",
    "Send",
    "Sleep",
    "Step",
    "Target",
    "TunnelError",
    "connect_error",
    "connect_timeout_error",
    "drive",
    "parse_target",
    "wire_headers",
    "with_credentials",
]
