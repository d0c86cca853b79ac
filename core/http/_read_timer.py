"""Which deadline the next read of a response has, and what to say when it passes.

Until the first body byte: ``first_byte_timeout`` from the first read (the
request was just sent; header bytes and interim responses do not restart it,
so a server dripping its headers or flooding ``1xx`` cannot hold a stream).
After it: ``idle_timeout`` from the last read that brought progress: bytes
that made an event, or, as heartbeats, bytes that made none while fewer than
`HEARTBEAT_BYTES` of them came since the last event. A server's keep-alive
comments keep a quiet stream open; a flood of them does not. The caller's
total deadline, if any, caps both.

Sans I/O: the shell's clock comes in as ``now``.
"""

from __future__ import annotations

from typing import Final

from .._events import Error
from .._options import Options
from ._target import seconds_text

__all__ = ["HEARTBEAT_BYTES", "ReadTimer"]

#: Body bytes that make no event (SSE comments, pings, blank keep-alives) and still
#: restart the idle timer, counted since the last event.
HEARTBEAT_BYTES: Final = 64 << 10


class ReadTimer:
    """The timers of one response: fed the body as it arrives, asked before each read."""

    __slots__ = (
        "_body_seen",
        "_deadline",
        "_first_byte_error",
        "_fresh",
        "_idle_error",
        "_options",
        "_phase_ref",
        "_silent_bytes",
        "_total_error",
    )

    def __init__(self, options: Options, deadline: float | None) -> None:
        self._options = options
        #: the caller's total deadline on the shell's clock, if any
        self._deadline = deadline
        self._phase_ref: float | None = None
        self._body_seen = False
        #: progress since the last `next` (restarts the idle timer)
        self._fresh = False
        #: body bytes since the last one that made an event
        self._silent_bytes = 0
        # what each timer says when it fires: fixed for the exchange, built once
        self._idle_error = Error.network(
            f"idle timeout: no data for {seconds_text(options.idle_timeout)}"
        )
        self._first_byte_error = Error.network(
            f"first-byte timeout: no response body within {seconds_text(options.first_byte_timeout)}"
        )
        total = options.total_timeout if options.total_timeout is not None else 0.0
        self._total_error = Error.network(
            f"total timeout: the stream did not finish within {seconds_text(total)}"
        )

    def body(self, size: int, made_events: bool) -> None:
        """``size`` body bytes arrived, and whether they made an event."""
        self._body_seen = True
        self._silent_bytes = 0 if made_events else self._silent_bytes + size
        self._fresh = self._fresh or self._silent_bytes <= HEARTBEAT_BYTES

    def next(self, now: float) -> tuple[float, Error]:
        """The deadline for the next read and the `Error` to end with if it passes."""
        opts = self._options
        if self._phase_ref is None or (self._body_seen and self._fresh):
            self._phase_ref = now
            self._fresh = False
        if self._body_seen:
            deadline, error = self._phase_ref + opts.idle_timeout, self._idle_error
            if self._silent_bytes > HEARTBEAT_BYTES:
                error = _silent_error(opts.idle_timeout, self._silent_bytes)
        else:
            deadline, error = self._phase_ref + opts.first_byte_timeout, self._first_byte_error
        if self._deadline is not None and self._deadline <= deadline:
            return self._deadline, self._total_error
        return deadline, error


def _silent_error(idle_timeout: float, silent: int) -> Error:
    return Error.network(
        f"idle timeout: no event for {seconds_text(idle_timeout)}, only {silent} bytes that "
        f"make none (keep-alives, comments; at most {HEARTBEAT_BYTES} such bytes count as "
        "signs of life)"
    )
