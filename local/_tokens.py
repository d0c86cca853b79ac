"""Token id -> the exact bytes it stands for.

The core state machine takes bytes, like every provider, so the local model
hands it each generated token's raw bytes rather than decoded text: a UTF-8
character split across two tokens then reassembles in the core's incremental
decoder exactly as a network chunk boundary would. Byte-level BPE tokens
(GPT-2 alphabet) and SentencePiece pieces (``▁`` for space, ``<0xNN>`` byte
fallback) are mapped directly; added tokens are their literal text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Final

__all__ = ["byte_level_alphabet", "special_token_text", "token_bytes_table"]

_BYTE_PIECE: Final = re.compile(r"<0x([0-9A-Fa-f]{2})>")


def byte_level_alphabet() -> dict[str, int]:
    """GPT-2's printable stand-in character for each byte value, inverted (char -> byte).

    Printable Latin-1 bytes stand for themselves; the other 68 bytes are
    shifted to U+0100 upwards in byte order, which is why a space is ``Ġ``.
    """
    printable = [
        *range(ord("!"), ord("~") + 1),
        *range(ord("¡"), ord("¬") + 1),
        *range(ord("®"), ord("ÿ") + 1),
    ]
    table = {chr(b): b for b in printable}
    shifted = 0
    for b in range(256):
        if b not in printable:
            table[chr(256 + shifted)] = b
            shifted += 1
    return table


def _uses_byte_level(tokenizer_json: dict[str, Any]) -> bool:
    def walk(node: Any) -> bool:
        if isinstance(node, dict):
            if node.get("type") == "ByteLevel":
                return True
            return any(walk(v) for v in node.values())
        if isinstance(node, list):
            return any(walk(v) for v in node)
        return False

    return walk(tokenizer_json.get("decoder")) or walk(tokenizer_json.get("pre_tokenizer"))


def token_bytes_table(vocabulary: Sequence[str], tokenizer_json: dict[str, Any]) -> list[bytes]:
    """Bytes for every id of ``vocabulary`` (CTranslate2's token strings, in id order)."""
    added = {t["content"] for t in tokenizer_json.get("added_tokens", []) if "content" in t}
    if _uses_byte_level(tokenizer_json):
        alphabet = byte_level_alphabet()
        # str.translate and one regex search run in C: this table is built on every
        # model load, for every token of the vocabulary (49k for SmolLM2)
        outside = re.compile(f"[^{re.escape(''.join(alphabet))}]")
        to_latin1 = str.maketrans({ch: chr(b) for ch, b in alphabet.items()})

        def convert(token: str) -> bytes:
            if token in added or outside.search(token):
                return token.encode("utf-8")
            return token.translate(to_latin1).encode("latin-1")

    else:

        def convert(token: str) -> bytes:
            if token in added:
                return token.encode("utf-8")
            piece = _BYTE_PIECE.fullmatch(token)
            if piece is not None:
                return bytes([int(piece.group(1), 16)])
            return token.replace("▁", " ").encode("utf-8")

    return [convert(token) for token in vocabulary]


def special_token_text(value: Any) -> str:
    """``tokenizer_config.json`` spells special tokens as strings or as AddedToken dicts."""
    if isinstance(value, dict):
        return str(value.get("content") or "")
    return str(value or "")
