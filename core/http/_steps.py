"""The I/O steps `drive` asks a shell to perform, and the answers it expects back.

A stream is a small program of I/O steps: connect, send, receive with a
deadline, sleep before a retry, hand events to the caller, put the socket
back or close it. `streamfn.core.http._driver.drive` is that program as a plain
generator: it yields one step at a time and the shell answers with the step's
result, typed below. All the decisions (which timer, when to retry, which
`Error`, when a socket may be reused) are made in the core once; each shell
is a short interpreter of these six steps.
"""

from __future__ import annotations

from typing import Final, NamedTuple

from .._events import Error, Event
from ._exchange import Exchange
from ._proxy_env import Proxy
from ._target import Target

__all__ = [
    "EXPIRED",
    "Answer",
    "Connect",
    "ConnectAnswer",
    "Emit",
    "Expired",
    "PoolKey",
    "Receive",
    "ReceiveAnswer",
    "Release",
    "Send",
    "SendAnswer",
    "Sleep",
    "Step",
]

#: What identifies interchangeable connections: scheme, host, port and the proxy.
PoolKey = tuple[str, str, int, Proxy | None]


class Expired:
    """The type of `EXPIRED`, the answer to a step whose deadline passed."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "EXPIRED"


#: The answer to a step whose deadline passed.
EXPIRED: Final = Expired()


class Connect(NamedTuple):
    """Give me a connection to ``key`` (a pooled one unless ``fresh``), by ``deadline``.

    Answer (`ConnectAnswer`): the `Exchange` the pooled socket last carried
    (reuse its HTTP state), None for a new socket, or an `Error` (use
    `connect_error`; `EXPIRED` when the deadline passed).
    """

    target: Target
    proxy: Proxy | None
    key: PoolKey
    fresh: bool
    deadline: float


class Send(NamedTuple):
    """Send ``data`` by ``deadline``. Answer (`SendAnswer`): None, `EXPIRED`, or the exception."""

    data: bytes
    deadline: float


class Receive(NamedTuple):
    """Receive some bytes by ``deadline``.

    Answer (`ReceiveAnswer`): bytes (``b""`` at EOF), `EXPIRED`, or the exception.
    """

    deadline: float


class Sleep(NamedTuple):
    """Wait before the next attempt. Answer: None."""

    seconds: float


class Emit(NamedTuple):
    """Give these events to the caller. Answer: None."""

    events: list[Event]


class Release(NamedTuple):
    """Done with the socket: pool it with ``keep`` as its HTTP state, or close it when None.

    Answer: None.
    """

    keep: Exchange | None


Step = Connect | Send | Receive | Sleep | Emit | Release

ConnectAnswer = Exchange | Error | Expired | None
SendAnswer = BaseException | Expired | None
ReceiveAnswer = bytes | bytearray | BaseException | Expired
#: Whatever a shell may answer to any step (None to `Sleep`, `Emit` and `Release`).
Answer = ConnectAnswer | SendAnswer | ReceiveAnswer
