"""The assistant turns a gateway client sends back, attributed to the model they replay to.

A client of `streamfn serve` replays its earlier turns in its own dialect
(OpenAI Chat Completions, Anthropic Messages), which names no provider: the
parsed `AssistantMessage` has ``provider=""``. `prepare_messages` keeps
signatures (Claude's signed thinking, Gemini 3's ``thoughtSignature`` on a
function call) only for the provider and model that made them, so an
unattributed turn lost them all, and Gemini 3 answered with the documented
dummy at best. Through the gateway the turn was made by the model the
request names (the client got it from this server), so that is whose it is.

A signature the client invented gains nothing: the provider checks every
signature it is sent and refuses a bad one. Turns that do say where they come
from (the native format carries ``api``/``provider``/``model``) are left as
they are, so a turn from another model still loses its foreign signatures.
"""

from __future__ import annotations

import msgspec

from .._messages import AssistantMessage, Context
from ..catalogue._models import Model

__all__ = ["attribute_client_turns"]


def attribute_client_turns(context: Context, model: Model) -> Context:
    """``context`` with every assistant turn that names no provider attributed to
    ``model`` (its wire api, provider and id); the same object when there is none."""
    if not any(isinstance(m, AssistantMessage) and not m.provider for m in context.messages):
        return context
    messages = [
        msgspec.structs.replace(m, api=model.api, provider=model.provider, model=model.id)
        if isinstance(m, AssistantMessage) and not m.provider
        else m
        for m in context.messages
    ]
    return msgspec.structs.replace(context, messages=messages)
