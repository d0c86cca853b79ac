"""`open_call` and `replay`: the sans-I/O entry points that pick a wire format.

Provider modules are imported on first use, so importing the core stays
cheap and a broken provider module cannot break the others.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Final, Protocol, cast

from .events import Event
from .messages import Context
from .models import API_NAMES, Model
from .options import Options
from .providers.base import HTTPRequest

__all__ = ["API_MODULES", "Call", "open_call", "replay"]

#: `Model.api` -> module under `streamfn.core.providers` (the local model has no wire)
API_MODULES: Final = {api: api.replace("-", "_") for api in API_NAMES if api != "local"}


class Call(Protocol):
    """What a shell drives (see DESIGN.md, "Sans-I/O contract")."""

    request: HTTPRequest

    @property
    def finished(self) -> bool: ...

    def receive_response(
        self, status: int, headers: Iterable[tuple[str, str]] | Mapping[str, str]
    ) -> list[Event]: ...

    def receive_data(self, data: bytes) -> list[Event]: ...

    def receive_eof(self) -> list[Event]: ...

    def abort(self, message: str = ...) -> list[Event]: ...

    def sign(self, timestamp: datetime) -> HTTPRequest:
        """The request to send at ``timestamp`` (signed where the provider needs it)."""
        ...


class _ProviderModule(Protocol):
    def open_call(self, model: Model, context: Context, options: Options) -> Call: ...


def _module(api: str) -> _ProviderModule:
    try:
        name = API_MODULES[api]
    except KeyError:
        known = ", ".join(API_MODULES)
        raise ValueError(f"unknown wire api {api!r}; known: {known}") from None
    return cast(_ProviderModule, importlib.import_module(f"streamfn.core.providers.{name}"))


def open_call(model: Model, context: Context, options: Options | None = None) -> Call:
    """Build the request for ``model`` and return the call that decodes its response.

    Pure: no socket, no clock, no environment. Credentials come in
    ``options.api_key`` (the shells fill it from the environment).
    """
    return _module(model.api).open_call(model, context, options or Options())


def replay(
    api: str,
    body: bytes | Iterable[bytes],
    *,
    provider: str | None = None,
    status: int = 200,
    headers: Iterable[tuple[str, str]] | Mapping[str, str] | None = None,
    model: Model | None = None,
    options: Options | None = None,
) -> list[Event]:
    """Decode a recorded response body through a wire format, as a shell would.

    ``body`` is the whole body or an iterable of chunks; ``provider`` selects
    quirks (azure, groq, openrouter ...). Handy for tests, bug reports and
    `streamfn replay`.
    """
    model = model or Model(
        id="replay", provider=provider or api, api=api, base_url="http://replay.invalid"
    )
    call = open_call(model, Context(), options or Options(api_key="replay"))
    events = list(call.receive_response(status, headers or []))
    chunks = [body] if isinstance(body, (bytes, bytearray, memoryview)) else body
    for chunk in chunks:
        events += call.receive_data(bytes(chunk))
        if call.finished:
            break
    events += call.receive_eof()
    return events
