"""Bedrock's tables, read by both sides: stop reasons each way, exception types and statuses.

One place for each table, so what we send and what we read cannot drift apart
(`tests/core/test_dialect_tables.py` checks each inverse reads back what we send)."""

from __future__ import annotations

from typing import Final

from streamfn.core._events import ErrorKind, StopReason

__all__ = ["EXCEPTIONS", "EXCEPTION_STATUS", "STOP_REASONS", "STOP_REASONS_READ"]

STOP_REASONS: Final = {
    StopReason.STOP: "end_turn",
    StopReason.TOOL_USE: "tool_use",
    StopReason.LENGTH: "max_tokens",
}

#: our error kinds -> the exception type Bedrock sends for them mid-stream
EXCEPTIONS: Final = {
    ErrorKind.THROTTLED: "throttlingException",
    ErrorKind.CONTEXT_OVERFLOW: "validationException",
    ErrorKind.AUTH: "accessDeniedException",
    ErrorKind.NETWORK: "modelStreamErrorException",
    ErrorKind.INVALID_REQUEST: "validationException",
    ErrorKind.CONTENT_FILTER: "validationException",
    ErrorKind.PROTOCOL: "internalServerException",
    ErrorKind.LIMIT: "internalServerException",
    ErrorKind.BUDGET: "accessDeniedException",
}

STOP_REASONS_READ: Final = {
    "end_turn": StopReason.STOP,
    "stop_sequence": StopReason.STOP,
    "tool_use": StopReason.TOOL_USE,
    "max_tokens": StopReason.LENGTH,
}

#: exception type -> the HTTP status AWS documents for it, so `classify_stream_error`
#: sees the same signal as for a non-2xx answer (the status is not kept).
EXCEPTION_STATUS: Final = {
    "throttlingException": 429,
    "validationException": 400,
    "accessDeniedException": 403,
    "resourceNotFoundException": 404,
    "internalServerException": 500,
    "serviceUnavailableException": 503,
    "modelStreamErrorException": 502,  # the model failed mid-stream: retryable
    "modelTimeoutException": 408,
    "modelNotReadyException": 503,
}
