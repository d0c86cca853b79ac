"""Waiting through a cancellation on asyncio (what trio spells ``CancelScope(shield=True)``).

A stream that must not end before a worker has let go (the local model's
lane, a relayed server stream) waits here: a cancellation that arrives
meanwhile is held back until the wait is over, then raised.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

__all__ = ["wait_shielded"]


async def wait_shielded(wait: Callable[[], Coroutine[Any, Any, Any]]) -> None:
    """Await ``wait()`` to its end even if cancelled meanwhile, then let the cancellation through."""
    waiter = asyncio.ensure_future(wait())
    cancelled = False
    while not waiter.done():
        try:
            await asyncio.shield(waiter)
        except asyncio.CancelledError:
            cancelled = True
    if cancelled:
        raise asyncio.CancelledError
