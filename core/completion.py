"""`complete()`'s result: the folded message, or a typed exception when the stream failed.

A caller who asks for the whole answer in one call should not have to check
``message.error_message`` to learn that a 401 produced an empty answer. Both
shells' ``complete()`` therefore raise `CompletionError` carrying the `Error`
event (its ``kind``, ``status``, ``retry_after``) and the partial message;
``raise_on_error=False`` returns the message as it is instead.
"""

from __future__ import annotations

from collections.abc import Sequence

from .accumulate import accumulate
from .errors import CompletionError
from .events import Error, Event
from .messages import AssistantMessage

__all__ = ["CompletionError", "finish_completion"]


def finish_completion(events: Sequence[Event], *, raise_on_error: bool) -> AssistantMessage:
    """Fold ``events``; raise `CompletionError` when they end in an `Error` and the caller wants."""
    message = accumulate(events)
    if raise_on_error and events and isinstance(events[-1], Error):
        raise CompletionError(events[-1], message)
    return message
