"""AG-UI: the client call, the inbound parser and the encoder.

One package per wire format: both roles side by side, private modules behind this face.
"""

from ._client import (
    build_request,
    open_call,
)
from ._encode import (
    AGUIEncoder,
)
from ._inbound import (
    parse_agui_request,
)

__all__ = [
    "AGUIEncoder",
    "build_request",
    "open_call",
    "parse_agui_request",
]
