"""`open_call` and `replay`: the sans-I/O entry points that pick a wire format.

Provider modules are imported on first use, so importing the core stays
cheap and a broken provider module cannot break the others. Wire formats
from outside the package join the built-in ones with `register_api` (or the
``streamfn.apis`` entry point group, see `load_entry_point_apis`); from then
on `open_call`, `replay`, both shells, ``streamfn replay``/``chat`` and
``streamfn serve`` reach them like any other.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from types import ModuleType
from typing import Any, Final, Protocol, cast

from ._errors import UsageError
from ._events import Event
from ._messages import Context
from ._options import Options
from ._wire_formats import (
    API_MODULES,
    API_NAMES,
    REGISTERED,
    forget,
    room_module,
    wire_format,
)
from .catalogue._lifecycle import warn_if_deprecated
from .catalogue._models import Model
from .providers._base import HTTPRequest

__all__ = [
    "Call",
    "api_names",
    "check_transport",
    "load_entry_point_apis",
    "open_call",
    "register_api",
    "replay",
]


class Call(Protocol):
    """What a shell drives: request bytes out; status, headers and body bytes in; events
    out (the sans-I/O contract: docs/sans-io.md and docs/design.md)."""

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


#: wire formats added from outside the package: name -> module (or its dotted path)
_REGISTERED: Final = REGISTERED
#: built-in wire formats already imported (one dict lookup per call, not an import_module)
_LOADED: dict[str, _ProviderModule] = {}


def register_api(
    name: str, module: ModuleType | _ProviderModule | str, *, replace: bool = False
) -> None:
    """Add a wire format: ``Model(api=name, ...)`` is then served by ``module``.

    ``module`` is anything with ``open_call(model, context, options) -> Call``
    (a module, an object, or a dotted module path imported on first use). The
    simplest provider subclasses `streamfn.core.providers.SSECall` or
    ``NDJSONCall`` and writes one ``on_event``/``on_line`` method; "Your own
    wire format" in the documentation shows one. Built-in names are refused (``replace=True`` overrides an earlier
    registration, not a built-in), so a plug-in cannot silently take over
    ``openai-chat``.
    """
    if not name or name in API_NAMES:
        raise ValueError(f"{name!r} is a built-in wire api (or empty); choose another name")
    if name in _REGISTERED and not replace:
        raise ValueError(f"wire api {name!r} is already registered; pass replace=True")
    if not isinstance(module, str) and not callable(getattr(module, "open_call", None)):
        raise TypeError(f"{module!r} has no open_call(model, context, options) function")
    _REGISTERED[name] = module
    forget(name)


def api_names() -> list[str]:
    """Every wire format `open_call` can open: the built-in ones, then the registered ones."""
    return [*API_MODULES, *_REGISTERED]


def load_entry_point_apis(
    entry_points: Callable[..., Iterable[Any]] | None = None,
) -> list[str]:
    """Register every wire format installed under the ``streamfn.apis`` entry point group.

    A distribution declares ``[project.entry-points."streamfn.apis"] my-wire =
    "my_pkg.my_wire"``; the command line calls this at start (the core never
    does: reading installed metadata is the caller's business). Returns the
    names added. ``entry_points`` is `importlib.metadata.entry_points`, for tests.
    """
    if entry_points is None:
        from importlib.metadata import entry_points as installed

        entry_points = installed
    added = []
    for point in entry_points(group="streamfn.apis"):
        if point.name not in _REGISTERED and point.name not in API_NAMES:
            # Imported now, not on first use: the module may register its models too.
            register_api(point.name, point.load())
            added.append(point.name)
    return added


def _module(api: str) -> _ProviderModule:
    loaded = _LOADED.get(api)
    if loaded is not None:
        return loaded
    if api == "fallback":
        raise ValueError(
            "a fallback chain is tried model by model by the shells (stream, complete); "
            "for one call, open_call one of its .models"
        )
    module = room_module(api)
    if module is None:
        known = ", ".join(api_names())
        raise ValueError(f"unknown wire api {api!r}; known: {known} (add one with register_api)")
    if api not in _REGISTERED:  # a plug-in may be registered again: looked up each time
        _LOADED[api] = module
    return cast(_ProviderModule, module)


def open_call(model: Model, context: Context, options: Options | None = None) -> Call:
    """Build the request for ``model`` and return the call that decodes its response.

    Pure: no socket, no clock, no environment. Credentials come in
    ``options.api_key`` (the shells fill it from the environment). A model its
    provider deprecated logs one warning the first time (`_lifecycle`).
    """
    options = options or Options()
    check_transport(model, options)
    call = _module(model.api).open_call(model, context, options)
    warn_if_deprecated(model)
    return call


def check_transport(model: Model, options: Options) -> None:
    """Refuse ``transport="websocket"`` for a model whose wire format has none (its
    `WireFormat`'s ``websocket``)."""
    if options.transport == "websocket" and not wire_format(model.api).websocket:
        takes = " or ".join(f'api="{api}"' for api in api_names() if wire_format(api).websocket)
        raise UsageError(
            f'transport="websocket" is for {takes} models; {model.id!r} '
            f'uses api={model.api!r}: leave Options.transport at "http"'
        )


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
