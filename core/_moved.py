"""Old import paths that still work for one release, each with a `DeprecationWarning`.

The layout changed in 0.2: decoders moved to `streamfn.core.wire`, the server's
codec to `streamfn.core.serve`, the HTTP/1.1 exchange to `streamfn.core.http`.
Code that imports a module by its old name gets the new module (the same
object, so ``isinstance`` checks keep holding) and a warning naming the new
path. One table, one finder: nothing else in the package knows the old names.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import warnings
from collections.abc import Sequence
from types import ModuleType
from typing import Final

__all__ = ["MOVED_MODULES", "install"]

#: old module path -> where it lives now
MOVED_MODULES: Final[dict[str, str]] = {
    "streamfn.core.lines": "streamfn.core.wire.lines",
    "streamfn.core.sse": "streamfn.core.wire.sse",
    "streamfn.core.ndjson": "streamfn.core.wire.ndjson",
    "streamfn.core.eventstream": "streamfn.core.wire.eventstream",
    "streamfn.core.inbound": "streamfn.core.serve.inbound",
    "streamfn.core.encode_openai": "streamfn.core.serve.encode_openai",
    "streamfn.core.encode_anthropic": "streamfn.core.serve.encode_anthropic",
    "streamfn.core.encode_responses": "streamfn.core.serve.encode_responses",
    "streamfn.core.encode_gemini": "streamfn.core.serve.encode_gemini",
    "streamfn.core.encode_ollama": "streamfn.core.serve.encode_ollama",
    "streamfn.core.encode_bedrock": "streamfn.core.serve.encode_bedrock",
    "streamfn.core.agent_events": "streamfn.core.serve.agent_events",
    "streamfn.core.grounding": "streamfn.core.serve.grounding",
    "streamfn.core.http11": "streamfn.core.http.http11",
    "streamfn.core.proxy_env": "streamfn.core.http.proxy_env",
    "streamfn.core.content_coding": "streamfn.core.http.content_coding",
    "streamfn.core.sigv4": "streamfn.core.providers.sigv4",
    "streamfn.core.providers.base": "streamfn.core.providers",
}


class _MovedModuleFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Answers imports of an old path with the module at its new path."""

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in MOVED_MODULES:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        new = MOVED_MODULES[spec.name]
        warnings.warn(
            f"{spec.name} moved to {new}; import it from there "
            "(the old path goes away in the next release)",
            DeprecationWarning,
            stacklevel=2,
        )
        return importlib.import_module(new)

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run: `create_module` returned the module at its new path."""


def install() -> None:
    """Put the finder on `sys.meta_path` once (idempotent across reloads)."""
    if not any(isinstance(f, _MovedModuleFinder) for f in sys.meta_path):
        sys.meta_path.append(_MovedModuleFinder())
