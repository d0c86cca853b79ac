"""The user's cache directory, where streamfn keeps what it downloads or converts.

One rule for every cache (the model catalogue, the local model's weights):
``$XDG_CACHE_HOME/streamfn``, else ``~/.cache/streamfn``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

__all__ = ["user_cache_dir"]


def user_cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    """``$XDG_CACHE_HOME/streamfn``, else ``~/.cache/streamfn``: everything streamfn caches."""
    env = os.environ if environ is None else environ
    base = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "streamfn"
