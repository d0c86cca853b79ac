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
    [models.prices]                       # US dollars per million tokens, for
    input = 0.2                           # budgets and usage records (the catalogue
    output = 0.6                          # prices known models already)

    [keys]                                # client keys on: each client its own key
    store = "sqlite:///var/lib/streamfn/gateway.db"   # default: the default store

Several entries with the same ``name`` are that name's deployments, as in
LiteLLM's ``model_list``: each entry whole (its own upstream, base URL, key
variable, headers and defaults), plus ``weight`` (its share of the traffic) and
``deployment`` (its name in health records). Requests go to the least busy
healthy one; one that fails rests for ``cooldown`` seconds (or the upstream's
Retry-After, up to ``max_cooldown``), both set at the top of the file. Entries
over lists under one name: each deployment is a model entry like any other, so
moving one from its own name into a pool is a change of ``name``, nothing else.

Keys themselves never go in the file, only the names of the variables that
hold them. Everything here is the operator's; clients of the server choose
only generation knobs (see `streamfn.core.serve._inbound`).
"""

from __future__ import annotations

import difflib
import re
import tomllib
from pathlib import Path
from typing import Any

import msgspec

from streamfn.core import Model, Options, UnknownModel, UsageError, get_model
from streamfn.core._call import api_names, check_transport
from streamfn.core.serve._deployments import Cooldown, labels

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
    prices: _Prices | None = None
    defaults: dict[str, Any] = msgspec.field(default_factory=dict)
    deployment: str | None = None
    weight: float = 1.0


class _Prices(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """A model's prices in US dollars per million tokens (as the catalogue gives them)."""

    input: float
    output: float
    cache_read: float = 0.0
    cache_write: float = 0.0


class _Keys(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    store: str | None = None


class _File(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    registry: bool = False
    cooldown: float = Cooldown().default
    max_cooldown: float = Cooldown().longest
    models: list[_Entry] = msgspec.field(default_factory=list)
    keys: _Keys | None = None


class GatewayConfig(msgspec.Struct, kw_only=True):
    """What a configuration file says: the served models, and whether the registry's too."""

    registry: bool
    models: list[Any]  # list[ServedModel]; typed loosely to keep this module import-light
    #: the positions in ``models`` of the entries that set their own ``base_url``
    own_base_url: frozenset[int] = frozenset()
    #: how long a failed deployment rests
    cooldown: Cooldown = msgspec.field(default_factory=Cooldown)
    #: client keys: the store's URL ("" the default store), None when the file has no [keys]
    store: str | None = None


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
    if entry.prices is not None:
        changes.update(_priced(entry.prices, where))
    return msgspec.structs.replace(model, **changes) if changes else model


def _priced(prices: _Prices, where: str) -> dict[str, Any]:
    """The ``[models.prices]`` table as `Model` fields (they replace the catalogue's)."""
    fields = {
        "price_input": prices.input,
        "price_output": prices.output,
        "price_cache_read": prices.cache_read,
        "price_cache_write": prices.cache_write,
    }
    for name, value in fields.items():
        if not 0 <= value < float("inf"):
            raise ConfigError(f"{where}.prices: {name.removeprefix('price_')} must be 0 or more")
    return {**fields, "price_tiers": ()}


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


def _labels(entries: list[_Entry], path: Path) -> list[str]:
    """Each entry's deployment name (`labels`), in the file's order."""
    by_name: dict[str, list[int]] = {}
    for i, entry in enumerate(entries):
        by_name.setdefault(entry.name, []).append(i)
    named = [""] * len(entries)
    for name, positions in by_name.items():
        try:
            chosen = labels(name, [entries[i].deployment for i in positions])
        except ValueError as exc:
            raise ConfigError(f"{path.name}: {exc}") from None
        for i, label in zip(positions, chosen, strict=True):
            named[i] = label
    return named


#: the tables of the file by where they are (list positions left out), for the fields
#: an unknown one is likely a misspelling of
_TABLES: dict[str, type[msgspec.Struct]] = {
    "": _File,
    ".models": _Entry,
    ".models.prices": _Prices,
    ".keys": _Keys,
}
_UNKNOWN = re.compile(r"unknown field `(?P<field>[^`]+)`(?: - at `\$(?P<at>[^`]*)`)?")


def _explained(exc: msgspec.ValidationError) -> str:
    """The decoder's message, and for a field the file may not have (a typo, most
    often: ``wieght``) the one it likely meant and the ones that table takes."""
    found = _UNKNOWN.search(str(exc))
    at = (found["at"] or "") if found else ""
    table = _TABLES.get(re.sub(r"\[\d+\]", "", at)) if found else None
    if found is None or table is None:
        return str(exc)
    known = [field.encode_name for field in msgspec.structs.fields(table)]
    guess = difflib.get_close_matches(found["field"], known, n=1)
    where = at.lstrip(".") or "the top level"
    return (
        f"unknown field {found['field']!r} in {where}"
        + (f": did you mean {guess[0]!r}?" if guess else "")
        + f" (it takes {', '.join(known)})"
    )


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
        raise ConfigError(f"{path}: {_explained(exc)}") from None
    if not parsed.models:
        raise ConfigError(f"{path} names no models: add a [[models]] entry")
    try:
        cooldown = Cooldown(default=parsed.cooldown, longest=parsed.max_cooldown)
    except ValueError as exc:
        raise ConfigError(f"{path.name}: cooldown: {exc}") from None
    named = _labels(parsed.models, path)
    served = []
    for i, entry in enumerate(parsed.models):
        where = f"{path.name}: models[{i}] ({entry.name})"
        if not entry.weight > 0:
            raise ConfigError(f"{where}.weight: more than 0, got {entry.weight}")
        model, defaults = _upstream(entry, where), _defaults(entry, where)
        try:  # else every request of the model would fail, each one the server's 502
            check_transport(model, defaults)
        except UsageError as exc:
            raise ConfigError(f"{where}.defaults.transport: {exc}") from None
        served.append(
            ServedModel(
                name=entry.name,
                model=model,
                api_key_env=entry.api_key_env,
                defaults=defaults,
                deployment=named[i],
                weight=entry.weight,
            )
        )
    own = frozenset(i for i, e in enumerate(parsed.models) if e.base_url is not None)
    store = None if parsed.keys is None else parsed.keys.store or ""
    return GatewayConfig(
        registry=parsed.registry, models=served, own_base_url=own, cooldown=cooldown, store=store
    )


def with_base_urls(config: GatewayConfig, base_urls: dict[str, str]) -> GatewayConfig:
    """``config`` with ``--base-url PROVIDER=URL`` applied to its models of PROVIDER.

    An entry that sets its own, different, ``base_url`` is refused rather than
    silently moved (or silently left): the operator said two things, and must pick
    one. The same URL said twice (in any case, with or without the default port
    or a trailing ``/``) is one thing: it is accepted.
    """
    models = []
    for i, served in enumerate(config.models):
        url = base_urls.get(served.model.provider)
        if url is None:
            models.append(served)
            continue
        if i in config.own_base_url and not same_url(url, served.model.base_url):
            raise ConfigError(
                f"--base-url {served.model.provider}={url} would move the model "
                f"{served.name!r}, whose entry sets its own base_url "
                f"({served.model.base_url}); drop one of the two"
            )
        moved = msgspec.structs.replace(served.model, base_url=url)
        models.append(msgspec.structs.replace(served, model=moved))
    return msgspec.structs.replace(config, models=models)
