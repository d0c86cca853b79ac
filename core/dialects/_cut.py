"""An answer that ended in an error has no success word: the one rule for every encoder.

`StopReason.ERROR` and `StopReason.ABORTED` say an answer was cut (the
upstream reset, sent a malformed chunk, stopped mid-event, hit the content
cap, or the caller cancelled). A dialect's ``finish_reason`` / ``stop_reason``
tables therefore hold only the words of a *finished* answer, and reading one
for a cut answer goes through `finish_word`, which refuses: a whole body is
then an HTTP error (`streamfn.core.serve._status.early_error`), a stream ends
with its dialect's error event (`cut_error`). Nothing maps a cut answer to
``"stop"`` or ``"end_turn"``, so no client takes a cut answer for a complete one.

A turn the provider paused (``Done.paused``) and that was not continued is not
finished either, but not broken: it is incomplete, like one that reached its
token limit. `unpaused` gives every dialect without a word of its own for a
pause (all but Anthropic's ``pause_turn``) that reading: its ``length`` word
(OpenAI's ``length``, the Responses API's ``incomplete``, Gemini's
``MAX_TOKENS`` ...), never its ``stop``.
"""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from .._errors import StreamfnError
from .._events import CUT_STOP_REASONS, Done, Error, StopReason, finished_as

__all__ = ["CUT_STOP_REASONS", "CutAnswer", "cut_error", "finish_word", "unpaused"]


class CutAnswer(StreamfnError, ValueError):
    """A complete answer's body was asked for an answer that ended in an error."""


def finish_word(words: Mapping[StopReason, str], stop_reason: StopReason) -> str:
    """The dialect's word for how a finished answer ended; `CutAnswer` for a cut one."""
    word = words.get(stop_reason)
    if word is None:
        raise CutAnswer(
            f"an answer that ended with stop reason {stop_reason.value!r} was cut: it has no "
            "complete body; answer the error instead"
        )
    return word


def cut_error(done: Done) -> Error:
    """The error a stream ends with when a `Done` says the answer did not finish."""
    return Error.network(
        f"the answer ended with stop reason {done.stop_reason.value!r} before it was complete",
        usage=done.usage,
    )


def unpaused(done: Done) -> Done:
    """``done`` as a dialect without a pause word reads it: a paused turn that was not
    continued is incomplete (`StopReason.LENGTH`), never a finished answer."""
    finished = finished_as(done)
    return (
        done
        if finished is done.stop_reason
        else msgspec.structs.replace(done, stop_reason=finished)
    )
