"""Built-in models with published prices (US dollars per million tokens)."""

from __future__ import annotations

from .models import Model

BUILTIN_MODELS: list[Model] = []
