"""Anthropic's tables, read by both sides: stop reasons each way, error types and statuses.

One place for each table, so what we send and what we read cannot drift apart
(`tests/core/test_dialect_tables.py` checks each inverse reads back what we send)."""

from __future__ import annotations

from typing import Final

from streamfn.core._events import ErrorKind, StopReason

__all__ = ["ERROR_STATUS", "ERROR_TYPES", "STOP_REASONS", "STOP_REASONS_READ"]

#: our stop reasons of a finished answer -> Anthropic ``stop_reason`` (streamed and
#: whole messages alike); a cut one (error, aborted) has none (see `cut`)
STOP_REASONS: Final = {
    StopReason.STOP: "end_turn",
    StopReason.LENGTH: "max_tokens",
    StopReason.TOOL_USE: "tool_use",
}

ERROR_TYPES: Final = {
    ErrorKind.THROTTLED: "rate_limit_error",
    ErrorKind.CONTEXT_OVERFLOW: "invalid_request_error",
    ErrorKind.AUTH: "authentication_error",
    ErrorKind.NETWORK: "overloaded_error",
    ErrorKind.INVALID_REQUEST: "invalid_request_error",
    ErrorKind.CONTENT_FILTER: "invalid_request_error",
    ErrorKind.PROTOCOL: "api_error",
    ErrorKind.LIMIT: "api_error",
    ErrorKind.BUDGET: "permission_error",  # a spending cap: not retried, like a 403
}

STOP_REASONS_READ: Final = {
    "end_turn": StopReason.STOP,
    "stop_sequence": StopReason.STOP,
    "pause_turn": StopReason.STOP,
    "max_tokens": StopReason.LENGTH,
    "tool_use": StopReason.TOOL_USE,
}

#: The HTTP status Anthropic documents for each error type; a tie-breaker for
#: `classify_stream_error` on errors that arrive inside a 200 stream.
ERROR_STATUS: Final = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}
