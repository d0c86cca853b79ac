"""`complete()`'s result: the folded message, or a typed exception when the stream failed.

A caller who asks for the whole answer in one call should not have to check
``message.error_message`` to learn that a 401 produced an empty answer. Both
shells' ``complete()`` therefore raise `CompletionError` carrying the `Error`
event (its ``kind``, ``status``, ``retry_after``) and the partial message;
``raise_on_error=False`` returns the message as it is instead.

A streaming caller gets the same choice: `raise_for_error` turns an `Error`
event (or a batch of events ending in one, from the sans-I/O calls) into a
`StreamError`, and the shells' ``stream(..., raise_on_error=True)`` applies it
to every event, so one rule decides what "failed" means everywhere.
"""

from __future__ import annotations

from collections.abc import Sequence

from ._accumulate import accumulate
from ._errors import CompletionError, StreamError
from ._events import Done, Error, Event, Start
from ._messages import AssistantMessage
from ._options import Options

__all__ = ["CompletionError", "StreamError", "finish_completion", "raise_for_error"]


def raise_for_error(events: Event | Sequence[Event]) -> None:
    """Raise `StreamError` when ``events`` is an `Error` event, or a batch of events
    (what `Call.receive_data` returns) that ends in one; do nothing otherwise.

    An `Error` is always the last event of a stream, so only the last one is looked at.
    """
    last = events[-1] if isinstance(events, Sequence) and events else events
    if isinstance(last, Error):
        raise StreamError(last)


def finish_completion(
    events: Sequence[Event], *, raise_on_error: bool, options: Options | None = None
) -> AssistantMessage:
    """Fold ``events``; raise `CompletionError` when they end in an `Error` and the caller
    wants. With ``options.response_schema`` the answer is parsed into ``message.parsed``
    (`OutputValidationError` when it does not validate and the caller wants errors)."""
    if not events or not isinstance(events[-1], (Done, Error)):
        # a stream that stopped without saying how is a cut answer, never a whole one
        head: list[Event] = [] if events else [Start()]
        events = [*head, *events, Error.network("the stream ended without a terminal event")]
    message = accumulate(events)
    if raise_on_error and isinstance(events[-1], Error):
        raise CompletionError(events[-1], message)
    if options is not None and options.response_schema is not None:
        from .json._structured import OutputValidationError, attach_parsed

        try:
            attach_parsed(message, options)
        except OutputValidationError:
            if raise_on_error:
                raise
    return message
