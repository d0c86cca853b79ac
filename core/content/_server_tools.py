"""Provider-run tools (web search, code execution) beside function tools.

A `ServerTool` in `Context.tools` becomes each wire format's own tool object,
as its room's `WireFormat` says (``server_tools``: the object for each type;
the documents-and-citations page of the manual has the table). A format with none runs no
tools of its own. Which types a model
takes is its `Capabilities` ``server_tools`` (unset: its format's); a type
it cannot take is an `UnsupportedInput` before any request is sent, naming
the provider and the alternatives. ``config`` is merged into the tool object
(never over its ``type`` or ``name``); a key the wire format's tool does not
take (``WireFormat.server_tool_keys``) is an `UnsupportedInput`
naming the key, the provider and the keys it takes, instead of the provider's
400. ``Options.extra_body`` is still deep-merged over the whole body last, for
anything this table does not cover.

These tools are billed to whoever holds the key: `streamfn serve` refuses a
client request that carries one unless the operator allows that type
(``--allow-server-tools``; see `streamfn.core.dialects._request_fields.refuse_server_tools`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from .._messages import Context, ServerTool
from .._wire_formats import API_MODULES, REGISTERED, wire_format
from ..catalogue._capabilities import UnsupportedInput, capabilities_for

if TYPE_CHECKING:
    from ..catalogue._models import Model

__all__ = [
    "SERVER_TOOL_TYPES",
    "check_server_tools",
    "formats_running",
    "server_tools_for",
    "tool_objects",
]

SERVER_TOOL_TYPES: Final = ("web_search", "code_execution")


def server_tools_for(model: Model) -> tuple[str, ...]:
    """The server-tool types ``model`` takes: its capabilities', else its format's."""
    declared = capabilities_for(model).server_tools
    if declared is not None:
        return declared
    room = wire_format(model.api)
    if room.server_tool_types is not None:
        return room.server_tool_types(model)
    return tuple(room.server_tools)


def check_server_tools(tools: list[ServerTool], model: Model) -> None:
    """Refuse, before anything is sent, a server tool the model has not, or a ``config``
    key its wire format's tool does not take (``WireFormat.server_tool_keys``)."""
    takes = server_tools_for(model)
    for tool in tools:
        if tool.type not in takes:
            offered = ", ".join(takes) if takes else "none"
            runs = ", ".join(formats_running(tool.type)) or "none"
            raise UnsupportedInput(
                f"{model.provider} ({model.api} API, model {model.id}) has no server tool "
                f"{tool.type!r} (it offers: {offered}); use a provider that runs it "
                f"(wire formats: {runs}) or give the model a function tool that does the work"
            )
        accepted = wire_format(model.api).server_tool_keys.get(tool.type)
        if accepted is None:
            continue  # a format this table does not describe: its config goes as given
        unknown = sorted(set(tool.config) - accepted)
        if unknown:
            listed = ", ".join(sorted(accepted)) or "none"
            raise UnsupportedInput(
                f"{model.provider} ({model.api} API) takes no {', '.join(map(repr, unknown))} "
                f"in a {tool.type} server tool's config; the keys it takes: {listed}. "
                "Leave the key out for this provider (each provider names these settings its own way)"
            )


def formats_running(kind: str) -> list[str]:
    """The wire formats whose room has a tool object for server tools of type ``kind``."""
    return [api for api in (*API_MODULES, *REGISTERED) if kind in wire_format(api).server_tools]


def _merged(base: Mapping[str, Any], config: dict[str, Any]) -> dict[str, Any]:
    out = {key: dict(value) if isinstance(value, dict) else value for key, value in base.items()}
    if len(out) == 1 and isinstance(
        next(iter(out.values())), dict
    ):  # one key holding the config: {"googleSearch": {}}
        key = next(iter(out))
        out[key].update(config)
        return out
    out.update({k: v for k, v in config.items() if k not in ("type", "name")})
    return out


def tool_objects(model: Model, context: Context) -> list[dict[str, Any]]:
    """The tool objects of ``context``'s server tools for ``model``'s format (checked
    already by `check_server_tools`)."""
    table = wire_format(model.api).server_tools
    return [_merged(table[t.type], t.config) for t in context.server_tools if t.type in table]
