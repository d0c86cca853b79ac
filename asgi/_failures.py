"""What a client is told when the backend raises instead of streaming.

A backend failure is the client's `Error` event, never a 500 page, and never the
exception's text where that text is the operator's business (a missing upstream
key, a traceback): those go to the log, and the client gets a message it can act on.
"""

from __future__ import annotations

import logging

from streamfn.core import Error, MissingCredentials, StructuredOutputUnsupported, UnsupportedInput
from streamfn.core._cli_words import cli_words
from streamfn.core.serve._log_text import loggable
from streamfn.core.serve._status import no_upstream_key

from ._contract import UnknownModelError

__all__ = ["backend_failure"]

log = logging.getLogger("streamfn")


def backend_failure(exc: Exception, model: str) -> Error:
    """The client's `Error` for ``exc``, raised by the backend serving ``model``; call
    it inside the ``except`` block, so an unexpected failure is logged with its traceback."""
    if isinstance(exc, UnknownModelError):
        return Error.invalid_request(str(exc), status=404)
    if isinstance(exc, UnsupportedInput):  # a kind of input or server tool the model lacks
        return Error.invalid_request(str(exc), status=400)
    if isinstance(exc, MissingCredentials):
        log.error(
            "no upstream key for model %s: %s",
            loggable(model),
            loggable(exc),
            extra=cli_words(_missing_key_for_the_cli(exc, model)),
        )
        # the variable's name is no secret, and the operator needs it: Bedrock's are a set
        return Error.auth(no_upstream_key(exc.variables, all_of=exc.provider == "bedrock"))
    if isinstance(exc, StructuredOutputUnsupported):  # the client's schema, this model
        return Error.invalid_request(str(exc))
    # the details are the operator's (the log), not the untrusted client's
    log.exception("backend failed for model %s", loggable(model))
    return Error.network("the server failed to produce this answer")


def _missing_key_for_the_cli(exc: MissingCredentials, model: str) -> str:
    """The missing-key log line for whoever runs ``streamfn serve``: the variable to
    set where the server runs, or the config file's ``api_key_env``; never ``Options``."""
    if not exc.variables:  # a config entry's own variable: its message names it
        return f"no upstream key for model {loggable(model)}: {loggable(exc)}"
    variables = " or ".join(exc.variables)
    return (
        f"no upstream key for model {loggable(model)}: set {variables} in the environment "
        "streamfn serve runs in (or name another variable with api_key_env in its "
        "--config entry) and restart it"
    )
