"""``streamfn serve --config FILE``: the models a gateway serves, in TOML.

The shape users know from LiteLLM's model list: each entry is a name
clients ask for and the upstream model behind it, with its base URL, the
environment variable holding its key, extra headers and defaults::

    registry = false          # serve only the models below (the default)

    [[models]]
    name = "fast"                         # what clients put in "model"
    upstream = "openai:gpt-4o-mini"       # a known provider:model ...
    api_key_env = "TEAM_A_OPENAI_KEY"     # default: the provider's usual variable
    headers = { "OpenAI-Organization" = "org-123" }
    [models.defaults]                     # a client's own values win
    temperature = 0.2
    max_tokens = 1024

    [[models]]
    name = "llama"
    api = "openai-chat"                   # ... or any server speaking a known format
    id = "meta-llama/Llama-3.1-8B-Instruct"
    base_url = "http://vllm.internal:8000/v1"
    max_output = 8192

Keys themselves never go in the file, only the names of the variables that
hold them. Everything here is the operator's; clients of the server choose
only generation knobs (see `streamfn.core.serve._inbound`).
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import msgspec

from streamfn.core import Model, Options, UnknownModel, UsageError, get_model
from streamfn.core._call import api_names, check_transport

from ._flags import same_url

__all__ = ["ConfigError", "GatewayConfig", "load_gateway_config", "with_base_urls"]


class ConfigError(UsageError):
    """The configuration file is unusable; the message names the entry and the field."""


class _Entry(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    name: str
    upstream: str | None = None
    api: str | None = None
    id: str | None = None
    provider: str | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    headers: dict[str, str] | None = None
    max_output: int | None = None
    context_window: int | None = None
    defaults: dict[str, Any] = msgspec.field(default_factory=dict)


class _File(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    registry: bool = False
    models: list[_Entry] = msgspec.field(default_factory=list)


class GatewayConfig(msgspec.Struct, kw_only=True):
    """What a configuration file says: the served models, and whether the registry's too."""

    registry: bool
    models: list[Any]  # list[ServedModel]; typed loosely to keep this module import-light
    #: the served names whose entry sets its own ``base_url``
    own_base_url: frozenset[str] = frozenset()


#: defaults a file may not set: they have their own keys (and keys never go in files)
_NOT_DEFAULTS = ("api_key", "base_url", "headers")


def _upstream(entry: _Entry, where: str) -> Model:
    if entry.upstream is not None:
        if entry.api is not None or entry.id is not None:
            raise ConfigError(f"{where}: give either upstream or api + id, not both")
        try:
            model = get_model(entry.upstream)
        except UnknownModel as exc:
            raise ConfigError(f"{where}.upstream: {exc}") from None
    else:
        if entry.api is None or entry.id is None or entry.base_url is None:
            raise ConfigError(
                f'{where}: name a known model (upstream = "provider:id") or give api, id '
                "and base_url for any other server"
            )
        formats = api_names()  # the built-in wire formats and the plug-ins' (register_api)
        if entry.api not in formats:
            raise ConfigError(f"{where}.api: one of {', '.join(formats)}")
        model = Model(id=entry.id, provider=entry.provider or entry.api, api=entry.api, base_url="")
    changes: dict[str, Any] = {}
    if entry.base_url is not None:
        changes["base_url"] = entry.base_url.rstrip("/")
    if entry.headers:
        changes["headers"] = {**(model.headers or {}), **entry.headers}
    if entry.max_output is not None:
        changes["max_output"] = entry.max_output
    if entry.context_window is not None:
        changes["context_window"] = entry.context_window
    return msgspec.structs.replace(model, **changes) if changes else model


def _defaults(entry: _Entry, where: str) -> Options:
    for key in _NOT_DEFAULTS:
        if key in entry.defaults:
            raise ConfigError(
                f"{where}.defaults.{key}: not a default; use the entry's "
                f"{'api_key_env' if key == 'api_key' else key} instead"
            )
    try:
        return msgspec.convert(entry.defaults, Options)
    except msgspec.ValidationError as exc:
        raise ConfigError(f"{where}.defaults: {exc}") from None


def load_gateway_config(path: Path) -> GatewayConfig:
    """Read and check ``path``; raises `ConfigError` naming the entry and field."""
    from streamfn.asgi import ServedModel

    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}") from None
    try:
        parsed = msgspec.convert(raw, _File)
    except msgspec.ValidationError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    if not parsed.models:
        raise ConfigError(f"{path} names no models: add a [[models]] entry")
    served = []
    seen: set[str] = set()
    for i, entry in enumerate(parsed.models):
        where = f"{path.name}: models[{i}] ({entry.name})"
        if entry.name in seen:
            raise ConfigError(f"{where}: the name {entry.name!r} is used twice")
        seen.add(entry.name)
        model, defaults = _upstream(entry, where), _defaults(entry, where)
        try:  # else every request of the model would fail, each one the server's 502
            check_transport(model, defaults)
        except UsageError as exc:
            raise ConfigError(f"{where}.defaults.transport: {exc}") from None
        served.append(
            ServedModel(
                name=entry.name, model=model, api_key_env=entry.api_key_env, defaults=defaults
            )
        )
    own = frozenset(e.name for e in parsed.models if e.base_url is not None)
    return GatewayConfig(registry=parsed.registry, models=served, own_base_url=own)


def with_base_urls(config: GatewayConfig, base_urls: dict[str, str]) -> GatewayConfig:
    """``config`` with ``--base-url PROVIDER=URL`` applied to its models of PROVIDER.

    An entry that sets its own, different, ``base_url`` is refused rather than
    silently moved (or silently left): the operator said two things, and must pick
    one. The same URL said twice (in any case, with or without the default port
    or a trailing ``/``) is one thing: it is accepted.
    """
    models = []
    for served in config.models:
        url = base_urls.get(served.model.provider)
        if url is None:
            models.append(served)
            continue
        if served.name in config.own_base_url and not same_url(url, served.model.base_url):
            raise ConfigError(
                f"--base-url {served.model.provider}={url} would move the model "
                f"{served.name!r}, whose entry sets its own base_url "
                f"({served.model.base_url}); drop one of the two"
            )
        moved = msgspec.structs.replace(served.model, base_url=url)
        models.append(msgspec.structs.replace(served, model=moved))
    return msgspec.structs.replace(config, models=models)
