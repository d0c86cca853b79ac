"""Old import paths that still work for one release, each with a `DeprecationWarning`.

The layout changed in 0.2: decoders moved to `streamfn.core.wire`, the server's
codec to `streamfn.core.serve`, the HTTP/1.1 exchange to `streamfn.core.http`,
and `streamfn.core` itself kept only the names users touch. Code that imports
a module by its old name gets the new module, and code that takes a moved
name from `streamfn.core` gets the object from its new home (the same object
either way, so ``isinstance`` checks keep holding), with a warning naming the
new path. Two tables, one finder, one ``__getattr__``: nothing else in the
package knows the old names.
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

__all__ = ["MOVED_MODULES", "MOVED_NAMES", "install", "moved_attribute"]

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
    "streamfn.core.http11": "streamfn.core.http",
    "streamfn.core.http.http11": "streamfn.core.http",
    "streamfn.core.proxy_env": "streamfn.core.http.proxy_env",
    "streamfn.core.content_coding": "streamfn.core.http.content_coding",
    "streamfn.core.sigv4": "streamfn.core.providers.sigv4",
    "streamfn.core.providers.base": "streamfn.core.providers",
    "streamfn.local.cmd_serve": "streamfn.local.cli.serve",
    "streamfn.local.cmd_replay": "streamfn.local.cli.replay",
    "streamfn.local.serve_config": "streamfn.local.cli.serve_config",
    "streamfn.io_asyncio.guard": "streamfn.core.serve.guard",
    "streamfn.io_asyncio.agent_route": "streamfn.asgi.stamps",
}

#: names that left ``streamfn.core`` in 0.2 -> the module to import them from now
MOVED_NAMES: Final[dict[str, str]] = {
    "Accumulator": "streamfn.core.accumulate",
    "AssistantContent": "streamfn.core.messages",
    "UserContent": "streamfn.core.messages",
    "Call": "streamfn.core.call",
    "api_names": "streamfn.core.call",
    "classify_http_error": "streamfn.core.classify",
    "classify_message": "streamfn.core.classify",
    "parse_retry_after": "streamfn.core.classify",
    "resolve_api_key": "streamfn.core.credentials",
    "decode_event": "streamfn.core.events",
    "decode_event_json": "streamfn.core.events",
    "encode_event": "streamfn.core.events",
    "encode_event_json": "streamfn.core.events",
    "event_type": "streamfn.core.events",
    "FallbackModel": "streamfn.core.fallback",
    "compute_cost": "streamfn.core.models",
    "openai_compatible": "streamfn.core.models",
    "provider_names": "streamfn.core.models",
    "ThinkingName": "streamfn.core.options",
    "PartialJSONError": "streamfn.core.partial_json",
    "PartialJSONParser": "streamfn.core.partial_json",
    "HTTPRequest": "streamfn.core.providers",
    "sign_request": "streamfn.core.providers.sigv4",
    "TaggedDecoder": "streamfn.core.tagged",
    "Markup": "streamfn.core.text_tools",
    "TextToolCalls": "streamfn.core.text_tools",
    "text_tool_calls": "streamfn.core.text_tools",
    "EventStreamDecoder": "streamfn.core.wire",
    "EventStreamError": "streamfn.core.wire",
    "EventStreamMessage": "streamfn.core.wire",
    "encode_message": "streamfn.core.wire",
    "NDJSONDecoder": "streamfn.core.wire",
    "NDJSONError": "streamfn.core.wire",
    "SSEComment": "streamfn.core.wire",
    "SSEDecoder": "streamfn.core.wire",
    "SSEError": "streamfn.core.wire",
    "ServerSentEvent": "streamfn.core.wire",
    "encode_sse": "streamfn.core.wire",
}


def moved_attribute(package: str, name: str) -> object:
    """The module ``__getattr__`` of ``package``: a moved name, with a warning; else AttributeError."""
    new = MOVED_NAMES.get(name) if package == "streamfn.core" else None
    if new is None:
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    warnings.warn(
        f"{package}.{name} moved: import it from {new} "
        f"(`from {new} import {name}`; the old path goes away in the next release)",
        DeprecationWarning,
        stacklevel=3,
    )
    return getattr(importlib.import_module(new), name)


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
