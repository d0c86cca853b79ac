"""Counting for Chat Completions models: OpenAI's own models are counted by the
Responses counting endpoint (the same models, the same tokenizer); OpenAI-compatible
servers have no counting endpoint, so their models get `TokenCountUnsupported` (or an
estimate, when the caller accepts one)."""

from __future__ import annotations

from typing import Final

from streamfn.core.dialects.openai_responses._count import COUNTING as RESPONSES

__all__ = ["COUNTING"]

COUNTING: Final = RESPONSES
