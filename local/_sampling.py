"""A request's sampling settings as CTranslate2's ``generate_batch`` takes them.

The server lets through what every provider accepts (`streamfn.core.dialects._request_fields`):
a ``top_k`` up to 2**31 - 1 and any signed 64-bit seed. CTranslate2 refuses a
``sampling_topk`` above the vocabulary size and a seed outside unsigned 32 bits,
so both are mapped here to what means the same to the model.
"""

from __future__ import annotations

from typing import Any

from streamfn.core import Options

__all__ = ["generator_seed", "sampling_arguments"]


def sampling_arguments(options: Options, vocabulary: int) -> dict[str, Any]:
    """Greedy for temperature 0 (or none); else temperature, top-k and top-p, where a
    ``top_k`` at or above the ``vocabulary`` size keeps every token, as 0 does."""
    temperature = options.temperature or 0.0
    if temperature <= 0:
        return {"sampling_topk": 1}
    top_k = options.top_k or 0
    return {
        "sampling_temperature": temperature,
        "sampling_topk": 0 if top_k >= vocabulary else top_k,
        "sampling_topp": options.top_p if options.top_p is not None else 1.0,
    }


def generator_seed(options: Options) -> int | None:
    """The seed for a sampled generation (None when greedy or unseeded), folded into
    the unsigned 32 bits CTranslate2 takes: the same seed always gives the same text."""
    if options.seed is None or not (options.temperature or 0.0) > 0:
        return None
    return options.seed % 2**32
