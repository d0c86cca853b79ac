"""HTTP/1.1 for provider calls, sans I/O (needs h11): the exchange, the tunnel, the
steps a shell answers (the client that performs them: `streamfn.client`).

- `Exchange`: one request/response on a socket, h11 underneath;
- `SocketExchange`: one OpenAI Responses turn over a WebSocket, wsproto underneath;
- `ConnectTunnel`: the CONNECT that opens an HTTPS_PROXY tunnel;
- `drive` and its steps (`Connect`, `Send`, `Receive`, `Sleep`, `Emit`,
  `Release`): a stream's life as I/O steps a shell performs;
- `Target` and `parse_target`: where a request goes (URLs, proxies).
"""

from ._driver import TAIL_GRACE, drive, wire_headers
from ._exchange import MAX_TAIL_BYTES, Exchange
from ._socket_exchange import SocketExchange
from ._steps import (
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
from ._target import (
    MAX_HEADER_BYTES,
    USER_AGENT,
    Target,
    connect_error,
    connect_timeout_error,
    parse_target,
)
from ._tunnel import ConnectTunnel, TunnelError

__all__ = [
    "EXPIRED",
    "MAX_HEADER_BYTES",
    "MAX_TAIL_BYTES",
    "TAIL_GRACE",
    "USER_AGENT",
    "Answer",
    "Connect",
    "ConnectTunnel",
    "Emit",
    "Exchange",
    "Expired",
    "PoolKey",
    "Receive",
    "Release",
    "Send",
    "Sleep",
    "SocketExchange",
    "Step",
    "Target",
    "TunnelError",
    "connect_error",
    "connect_timeout_error",
    "drive",
    "parse_target",
    "wire_headers",
]
