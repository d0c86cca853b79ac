"""The CONNECT request that opens an HTTPS_PROXY tunnel, sans I/O.

The shell connects to the proxy, sends `ConnectTunnel.bytes_to_send`, feeds
the answer to `ConnectTunnel.receive_bytes` until it says the tunnel is open,
then starts TLS with the origin over the same socket.
"""

from __future__ import annotations

import h11

from .._errors import StreamfnError
from ._proxy_env import Proxy
from ._target import MAX_HEADER_BYTES, USER_AGENT, Target

__all__ = ["ConnectTunnel", "TunnelError"]


class TunnelError(StreamfnError):
    """The HTTPS proxy refused or broke the CONNECT; the message names the proxy, not its credentials."""


class ConnectTunnel:
    """``CONNECT host:port`` to an HTTPS_PROXY; after it succeeds the socket is a raw pipe."""

    def __init__(self, target: Target, proxy: Proxy) -> None:
        self.target = target
        self.proxy = proxy
        self._h11 = h11.Connection(h11.CLIENT, max_incomplete_event_size=MAX_HEADER_BYTES)
        self.established = False

    def bytes_to_send(self) -> bytes:
        authority = f"{self.target.host}:{self.target.port}"
        headers = [("Host", authority), ("User-Agent", USER_AGENT)]
        if self.proxy.authorization:
            headers.append(("Proxy-Authorization", self.proxy.authorization))
        head = self._h11.send(h11.Request(method="CONNECT", target=authority, headers=headers))
        return (head or b"") + (self._h11.send(h11.EndOfMessage()) or b"")

    def receive_bytes(self, data: bytes | bytearray) -> bool:
        """Feed the proxy's answer; True once the tunnel is open. Raises `TunnelError`."""
        where = f"proxy {self.proxy.host}:{self.proxy.port}"
        try:
            self._h11.receive_data(bytes(data))
            while True:
                event = self._h11.next_event()
                if event is h11.NEED_DATA:
                    if not data:
                        raise TunnelError(f"{where} closed the connection during CONNECT")
                    return False
                if isinstance(event, h11.Response):
                    if not 200 <= event.status_code < 300:
                        raise TunnelError(
                            f"{where} refused CONNECT to {self.target.host}:{self.target.port}: "
                            f"HTTP {event.status_code} {event.reason.decode('latin-1')}"
                        )
                    continue
                if event is h11.PAUSED:
                    if self._h11.trailing_data[0]:
                        raise TunnelError(f"{where} sent data before the TLS handshake")
                    self.established = True
                    return True
                if isinstance(event, h11.ConnectionClosed):
                    raise TunnelError(f"{where} closed the connection during CONNECT")
        except h11.RemoteProtocolError as exc:
            raise TunnelError(f"{where} sent a malformed CONNECT response: {exc}") from None
