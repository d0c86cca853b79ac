"""A thinking signature carried in a Responses ``reasoning`` item, there and back.

A Responses client replays the reasoning items it was sent; their
``encrypted_content`` is the only field that travels opaquely. OpenAI's own
reasoning (the decoder's signature is the item's JSON) keeps OpenAI's
``encrypted_content``. Any other provider's signature (Claude's signed thinking,
Gemini's thought signature) rides under a marker, so a gateway client that
replays the item gives the model its own signature back. A client that forges
one gains nothing: the provider checks every signature it is sent.
"""

from __future__ import annotations

import base64
import binascii
from typing import Final

import msgspec

__all__ = ["CARRIED", "encrypted_content", "signature_of"]

#: the start of an ``encrypted_content`` that carries another provider's signature
CARRIED: Final = "streamfn.signature.v1:"


def encrypted_content(signature: str) -> str | None:
    """What goes in the item's ``encrypted_content`` for ``signature`` (None: nothing)."""
    try:
        signed = msgspec.json.decode(signature)
    except msgspec.DecodeError:
        signed = None
    if isinstance(signed, dict):  # OpenAI's reasoning item, as its decoder keeps it
        encrypted = signed.get("encrypted_content")
        return encrypted if isinstance(encrypted, str) and encrypted else None
    return CARRIED + base64.urlsafe_b64encode(signature.encode()).decode()


def signature_of(encrypted: str, summary: list[str]) -> str:
    """The thinking signature a replayed item's ``encrypted_content`` stands for.

    Raises ValueError for a carried signature that does not decode."""
    if encrypted.startswith(CARRIED):
        try:
            carried = encrypted[len(CARRIED) :]
            return base64.b64decode(carried, altchars=b"-_", validate=True).decode()
        except (binascii.Error, UnicodeDecodeError):
            raise ValueError("a carried signature that does not decode") from None
    item = {
        "type": "reasoning",
        "encrypted_content": encrypted,
        "summary": [{"type": "summary_text", "text": text} for text in summary],
    }
    return msgspec.json.encode(item).decode()
