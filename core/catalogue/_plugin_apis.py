"""The wire formats added from outside the package, by name (see `_call.register_api`).

Its own room so the registry (`_models`) can take ``FORMAT:model-id`` for a
plug-in format without importing `call`, which imports the registry.
"""

from __future__ import annotations

__all__ = ["REGISTERED", "plugin_api_names"]

#: name -> the module serving it (or its dotted path, imported on first use)
REGISTERED: dict[str, object] = {}


def plugin_api_names() -> list[str]:
    """The names added with ``register_api`` (or the ``streamfn.apis`` entry points)."""
    return list(REGISTERED)
