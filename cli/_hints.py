"""What the command line tells a user to do about a stream's `Error`.

An auth error says "fix your key" only when the user's key is the one at
fault: through a streamfn server (``-m proxy:…``) the server's own token is
``STREAMFN_PROXY_TOKEN``, and a server that lacks (or had refused) its
upstream key is its operator's to fix, not the client's.
"""

from __future__ import annotations

from streamfn.core import Error, ErrorKind, Model
from streamfn.core._credentials import ENV_KEYS
from streamfn.core._wire_formats import wire_format

__all__ = ["error_hint"]


def error_hint(error: Error, model: Model) -> str | None:
    """One clause saying what to fix, or None when the message says it all."""
    if error.kind is not ErrorKind.AUTH:
        return None
    if wire_format(model.api).own_server:
        if error.status == 401:
            token = " or ".join(ENV_KEYS.get(model.provider, ("STREAMFN_PROXY_TOKEN",)))
            return (
                f"the streamfn server wants its token: set {token} to the token it was "
                "started with (or pass --api-key-env VAR)"
            )
        return (
            "the streamfn server's own upstream key is missing or was refused: its "
            "operator must set it; no key on this side fixes that"
        )
    return "check the API key (the provider's variable, or --api-key-env VAR)"
