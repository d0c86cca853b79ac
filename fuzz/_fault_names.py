"""`faults`: what can go wrong at the HTTP level, as a hypothesis strategy.

Each drawn value is the name of a fault the loopback `FakeProvider` enacts
(a path segment of its base URL): status codes with and without
Retry-After, stalls before and between bytes, resets, truncated bodies,
slow drips, keep-alive comments, redirects, compression, a connection that
answers twice. Give one to ``fake_provider.serve(body, fault=...)``.
"""

from __future__ import annotations

from typing import Final

from hypothesis import strategies as st

from ._fake_provider import FAULTS

__all__ = ["FAULT_GROUPS", "faults"]

#: faults by what a caller must survive; ``faults("status", "drop")`` draws from those
FAULT_GROUPS: Final[dict[str, tuple[str, ...]]] = {
    "ok": ("ok", "ok-length", "ok-close", "drip", "keepalive-comments", "late-tail", "paced"),
    "status": ("401", "403", "400-context", "429", "429-then-ok", "500-then-ok", "503",
               "429-date-then-ok", "429-date-far", "overloaded-then-ok"),
    "stall": ("stall-first", "stall-mid", "slow-headers", "flood-1xx", "flood-comments"),
    "drop": ("reset", "truncated", "no-terminal", "close-before-response"),
    "garbage": ("wrong-ctype", "garbage-body", "garbage-http", "big", "oversized"),
    "redirect": ("redirect-301", "redirect-302", "redirect-303", "redirect-307",
                 "redirect-308"),
    "coding": ("gzip", "deflate", "deflate-raw", "gzip-bomb", "gzip-corrupt", "br"),
    "pool": ("extra-same-packet", "extra-later", "idle-408"),
}


def faults(*groups: str, exclude: tuple[str, ...] = ()) -> st.SearchStrategy[str]:
    """Fault names of `FakeProvider` (all of them, or those of ``groups``)."""
    unknown = [g for g in groups if g not in FAULT_GROUPS]
    if unknown:
        raise ValueError(f"unknown fault groups {unknown}; groups: {', '.join(FAULT_GROUPS)}")
    names = [f for g in groups for f in FAULT_GROUPS[g]] if groups else list(FAULTS)
    return st.sampled_from([f for f in names if f not in exclude])
