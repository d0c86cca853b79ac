"""The agent-events dialect: the client call and the server's encoder.

One package per wire format: both roles side by side, private modules behind this face.
"""

from ._client import (
    build_request,
    open_call,
)
from ._encode import (
    AgentEventsEncoder,
)

__all__ = [
    "AgentEventsEncoder",
    "build_request",
    "open_call",
]
