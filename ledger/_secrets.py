"""Client key secrets: made from the operating system's randomness, kept only as hashes.

A secret is ``sfn-`` followed by 43 URL-safe characters (256 random bits), so a
leaked one is recognisable (secret scanners can match the prefix) and guessing
one is hopeless. With that much entropy a plain SHA-256 is the right hash: a slow
password hash would protect nothing more and cost every request milliseconds.
"""

from __future__ import annotations

import hashlib
import secrets

__all__ = ["PREFIX", "hash_secret", "new_key_id", "new_secret", "well_formed"]

PREFIX = "sfn-"
#: the characters of `secrets.token_urlsafe`
_URLSAFE = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


def new_secret() -> str:
    """A fresh client key secret."""
    return PREFIX + secrets.token_urlsafe(32)


def well_formed(presented: bytes) -> bool:
    """Whether ``presented`` has the shape of a secret `new_secret` makes (any other
    text is no key, found without asking a store)."""
    body = presented[len(PREFIX) :]
    return presented.startswith(PREFIX.encode()) and len(body) == 43 and _URLSAFE.issuperset(body)


def new_key_id() -> str:
    """A fresh public key id (safe to log, show and put in metrics)."""
    return "key_" + secrets.token_hex(6)


def hash_secret(secret: str) -> str:
    """What the store keeps of ``secret``."""
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()
