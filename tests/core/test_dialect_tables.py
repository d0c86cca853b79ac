"""Each dialect's tables are written once and read by both sides: what an encoder sends
for a stop reason, that dialect's response machine reads back as the same stop reason."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from streamfn.core._events import StopReason
from streamfn.core.dialects.anthropic import _tables as anthropic
from streamfn.core.dialects.bedrock import _tables as bedrock
from streamfn.core.dialects.ollama import _tables as ollama
from streamfn.core.dialects.openai_chat import _tables as openai_chat
from streamfn.core.dialects.ui_message_stream import _tables as ui

PAIRS = {
    "anthropic": (anthropic.STOP_REASONS, anthropic.STOP_REASONS_READ),
    "openai_chat": (openai_chat.FINISH_REASONS, openai_chat.FINISH_REASONS_READ),
    "bedrock": (bedrock.STOP_REASONS, bedrock.STOP_REASONS_READ),
    "ui_message_stream": (ui.FINISH_REASONS, ui.FINISH_REASONS_READ),
}


@pytest.mark.parametrize("dialect", sorted(PAIRS))
def test_what_we_send_reads_back_as_the_same_stop_reason(dialect: str) -> None:
    sent, read = PAIRS[dialect]
    assert {ours: read[word] for ours, word in sent.items()} == {ours: ours for ours in sent}


def test_ollama_tool_use_is_a_plain_stop_there() -> None:
    sent: Mapping[StopReason, str] = ollama.DONE_REASONS
    assert ollama.DONE_REASONS_READ[sent[StopReason.TOOL_USE]] is StopReason.STOP
    assert ollama.DONE_REASONS_READ[sent[StopReason.LENGTH]] is StopReason.LENGTH


def test_the_openai_error_codes_are_one_table_for_both_openai_encoders() -> None:
    from streamfn.core.dialects._openai_common import ERROR_CODES
    from streamfn.core.dialects.openai_chat import _encode as chat
    from streamfn.core.dialects.openai_responses import _encode as responses

    assert chat.ERROR_CODES is ERROR_CODES
    assert responses.ERROR_CODES is ERROR_CODES


def test_every_error_kind_has_a_word_in_every_dialect_and_a_gateway_status() -> None:
    """An encoder that met a kind its table lacks would fail mid-stream (the newest kind,
    ``budget``, included)."""
    from streamfn.core._events import ErrorKind
    from streamfn.core.dialects._openai_common import ERROR_CODES
    from streamfn.core.dialects.gemini._encode import ERROR_STATUS
    from streamfn.core.serve._status import STATUS_FOR_KIND

    tables = [anthropic.ERROR_TYPES, bedrock.EXCEPTIONS, ERROR_CODES, ERROR_STATUS]
    for table in [*tables, STATUS_FOR_KIND]:
        assert set(table) == set(ErrorKind), table
    assert STATUS_FOR_KIND[ErrorKind.BUDGET] == 403  # the caller's budget: not retried
