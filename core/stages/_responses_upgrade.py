"""The Responses upgrade: a Chat Completions model that only the Responses API serves.

Some OpenAI models (the ``-pro`` reasoning models, the codex models) answer
``POST /chat/completions`` with a 400 whose message says they are only
supported in ``v1/responses``. Rather than hand the caller that error, the
shells send the same request once more on the ``openai-responses`` wire
format and remember, per model in the client, to go there directly from then
on (a sticky upgrade: one failed request per model and client, not one per call).

`needs_responses_api` is the pure classifier: an ``invalid_request`` `Error`
with status 400 (some gateways say 404) whose message, which is the error
body's own message (see `classify_http_error`), says Chat Completions is the
wrong endpoint and Responses the right one. Any other 400 (a bad parameter,
context overflow) is left alone, so the upgrade costs exactly one extra
request and only when the provider asked for it. `streamfn.client._responses_upgrade.upgrade_to_responses`
wraps a client's stream with that rule.
"""

from __future__ import annotations

import logging
import re
from typing import Final

from .._events import Error, ErrorKind
from .._wire_formats import wire_format
from ..catalogue._models import Model

__all__ = [
    "UpgradeKey",
    "needs_responses_api",
    "responses_model",
    "upgrade_key",
]

log = logging.getLogger("streamfn")

#: "This model is only supported in v1/responses and not in v1/chat/completions."
#: (OpenAI), and the gateways' "/v1/chat/completions is not supported. Please use
#: /v1/responses" wording of the same remedy.
_RESPONSES_ONLY: Final = re.compile(
    r"only supported (?:in|on|by|with|via) (?:the )?/?v1/responses"
    r"|/?v1/chat/completions is not supported\b.{0,80}?\buse (?:the )?/?v1/responses",
    re.IGNORECASE | re.DOTALL,
)

#: a remembered upgrade is for this model at this server
UpgradeKey = tuple[str, str, str]


def needs_responses_api(error: Error) -> bool:
    """True when ``error`` is the provider saying the model needs the Responses API."""
    return (
        error.kind == ErrorKind.INVALID_REQUEST
        and error.status in (400, 404)
        and _RESPONSES_ONLY.search(error.message) is not None
    )


def responses_model(model: Model) -> Model | None:
    """The same model reached through the Responses API, where its format and provider
    may send it there (its `WireFormat`'s ``upgrade``); None where they never do."""
    upgrade = wire_format(model.api).upgrade
    return upgrade(model) if upgrade is not None else None


def upgrade_key(model: Model) -> UpgradeKey:
    """What a client remembers an upgrade under: the model at its server."""
    return (model.provider, model.base_url, model.id)
