"""The registry of known models, and the ways to name a model.

A `Model` (defined in `model_spec`, re-exported here) says where a model
lives (provider, wire api, base URL) and what it costs. The registry gives the
catalogued ones by ``provider:id`` (the built-in catalogue, or a newer one the
caller read and passed to `use_catalog`); an id nobody listed is configured
like its closest catalogued relative (`families`), with one warning saying so;
anything else (a vLLM or LM Studio server) is a `Model` built by hand or
`openai_compatible(...)`, so no model is ever out of reach.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import msgspec

from .._cli_words import cli_words
from .._errors import UnknownModel
from .._wire_formats import plugin_api_names
from ._model_spec import Model, PriceTier, compute_cost

if TYPE_CHECKING:
    from ._families import Described

__all__ = [
    "BUILTIN",
    "LOCAL_DEFAULT_ID",
    "CatalogInfo",
    "Model",
    "PriceTier",
    "UnknownModel",
    "catalog_info",
    "compute_cost",
    "get_model",
    "list_models",
    "local_model",
    "model",
    "openai_compatible",
    "provider_names",
    "register_model",
    "set_catalog_loader",
    "use_catalog",
]

log = logging.getLogger("streamfn")

_REGISTRY: dict[str, Model] = {}
#: the keys the catalogue in use put in the registry (a newer catalogue replaces them)
_FROM_CATALOGUE: set[str] = set()
#: ids configured by their family, already warned about (one warning each)
_ASSUMED: set[str] = set()
#: the warning for an id just configured by assumption, logged once it is usable
_PENDING: dict[str, Described] = {}
#: the catalogue's end-of-life and retirement tables (``provider:id`` -> (date, source,
#: retired)), for ids they name that no catalogue entry lists
_END_OF_LIFE: dict[str, tuple[str, str, bool]] = {}


class CatalogInfo(msgspec.Struct, frozen=True, kw_only=True):
    """Which catalogue the registry serves: ``origin`` is ``built-in`` or the file it was
    read from; ``source`` what it was made from; ``date`` its data's date; ``note`` why
    another candidate was not used."""

    origin: str
    source: str
    date: str
    models: int
    note: str = ""


_info: CatalogInfo | None = None
#: `CatalogInfo.origin` of the catalogue shipped with this version
BUILTIN = "built-in"


def register_model(model: Model, *, replace: bool = True) -> Model:
    """Add or replace a model under ``provider:id`` (it outlives any catalogue change)."""
    _ensure_builtin()
    if not replace and model.key in _REGISTRY:
        raise ValueError(f"model {model.key!r} is already registered")
    _REGISTRY[model.key] = model
    _FROM_CATALOGUE.discard(model.key)
    return model


def catalog_info() -> CatalogInfo:
    """The catalogue in use: where it came from, its source and date."""
    _ensure_builtin()
    assert _info is not None
    return _info


def use_catalog(
    document: Mapping[str, Any], *, origin: str, only_if_newer: bool = False
) -> CatalogInfo:
    """Serve the models of ``document`` (a catalogue the caller read) in place of the
    catalogue in use; models added with `register_model` stay.

    With ``only_if_newer`` a document whose data is older than the one in use is
    not used, and `catalog_info` says why. Raises `CatalogError`
    for a document that is not a catalogue, before changing anything.
    """
    global _info
    from ._catalog import describe_source, models_from_catalog

    _ensure_builtin()
    assert _info is not None
    models = models_from_catalog(document)  # checks it first
    date = str(document["source"]["date"])
    if only_if_newer and date < _info.date:
        _info = msgspec.structs.replace(
            _info, note=f"{origin} is older (data of {date}); using {_info.origin}"
        )
        return _info
    for key in _FROM_CATALOGUE:
        _REGISTRY.pop(key, None)
    _FROM_CATALOGUE.clear()
    _install(models)
    _ASSUMED.clear()
    _read_end_of_life(document)
    _info = CatalogInfo(
        origin=origin, source=describe_source(document), date=date, models=len(models)
    )
    return _info


def _install(models: list[Model]) -> None:
    for entry in models:
        if entry.key not in _REGISTRY:
            _REGISTRY[entry.key] = entry
            _FROM_CATALOGUE.add(entry.key)


def _read_end_of_life(document: Mapping[str, Any]) -> None:
    """Keep the catalogue's end-of-life and retirement tables for ids they name that no
    entry lists (the retirement table read last: its word wins)."""
    _END_OF_LIFE.clear()
    for name, retired in (("end_of_life", False), ("retired", True)):
        table = document.get(name) or {}
        for model_id, date in (table.get("dates") or {}).items():
            _END_OF_LIFE[f"{table['provider']}:{model_id}"] = (
                date,
                str(table["source"]),
                retired,
            )


def _assumed_lifecycle(derived: Model, like: Model | None, how: str) -> Model:
    """An assumed model's deprecation: the end-of-life and retirement tables' word on its
    own id, else its relative's when it is the same model; a family member's is not its
    own."""
    stated = _END_OF_LIFE.get(derived.key)
    if stated is not None:
        date, source, retired = stated
        return msgspec.structs.replace(
            derived, deprecated=True, retired=retired, end_of_life=date, deprecation_source=source
        )
    if like is not None and how == "the same model":
        return derived
    return msgspec.structs.replace(
        derived, deprecated=False, retired=False, end_of_life="", deprecation_source=""
    )


def list_models(provider: str | None = None) -> list[Model]:
    """Every catalogued model (or only ``provider``'s), sorted by provider then id:
    the built-in catalogue, a chosen catalogue file and `register_model`'s additions."""
    _ensure_builtin()
    models = sorted(_REGISTRY.values(), key=lambda m: (m.provider, m.id))
    return [m for m in models if provider is None or m.provider == provider]


def get_model(name: str) -> Model:
    """Look up ``provider:id`` (or a bare id when only one provider has it)."""
    _ensure_builtin()
    if name in _REGISTRY:
        return _REGISTRY[name]
    matches = [m for m in _REGISTRY.values() if m.id == name]
    if len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        keys = ", ".join(sorted(m.key for m in matches))
        raise UnknownModel(f"model {name!r} is ambiguous; say which provider: {keys}")
    needle = name.split(":")[-1].lower()
    close = sorted(k for k in _REGISTRY if needle and needle[:6] in k.lower())[:8]
    hint = f" Close matches: {', '.join(close)}." if close else ""
    raise UnknownModel(
        f"unknown model {name!r}.{hint} Use `streamfn models` to list known models, "
        "or build a Model(...) / openai_compatible(...) for any other server."
    )


def openai_compatible(
    model_id: str,
    base_url: str,
    *,
    provider: str = "openai-compatible",
    context_window: int = 32_768,
    max_output: int = 4_096,
    reasoning: bool = False,
) -> Model:
    """A model on any OpenAI-compatible server (vLLM, llama.cpp, LM Studio ...)."""
    return Model(
        id=model_id,
        provider=provider,
        api="openai-chat",
        base_url=base_url.rstrip("/"),
        context_window=context_window,
        max_output=max_output,
        reasoning=reasoning,
    )


#: providers with no catalogue entries: where their servers usually listen, and how they talk
_ENDPOINTS: dict[str, tuple[str, str]] = {
    "ollama": ("ollama", "http://localhost:11434"),
    "vllm": ("openai-chat", "http://localhost:8000/v1"),
    "lmstudio": ("openai-chat", "http://localhost:1234/v1"),
    "llamacpp": ("openai-chat", "http://localhost:8080/v1"),
    "proxy": ("proxy", "http://127.0.0.1:8000"),
    # these have no usable default: the caller's resource or server decides
    "openai-compatible": ("openai-chat", ""),
    "azure": ("openai-chat", ""),
}
#: ``api-name:id`` picks another wire format of a provider (``openai-responses:gpt-5``)
_API_ALIASES: dict[str, tuple[str, str]] = {"openai-responses": ("openai", "openai-responses")}
#: other names people use for a catalogue provider
_PROVIDER_ALIASES: dict[str, str] = {"gemini": "google"}


#: the model ``model("local")`` names: the one ``streamfn.local`` prepares on first use
LOCAL_DEFAULT_ID = "smollm2-135m-instruct"


def local_model(name: str = "", *, base_url: str | None = None) -> Model:
    """The local CTranslate2 model as a `Model` (``api="local"``): nothing is loaded here.

    ``name`` is empty or the default model's id (``smollm2-135m-instruct``,
    prepared on first use in the user cache or ``$STREAMFN_LOCAL_MODEL_DIR``),
    or the path of a CTranslate2 model directory. ``base_url`` may name the
    directory too (a path or a ``file://`` URI). The shells load it on first
    use (`streamfn.local._provider`), which needs the ``[local]`` extra.
    """
    directory = base_url or ""
    if name and name != LOCAL_DEFAULT_ID:
        if not name.startswith(("/", "./", "../", "~", "file:")):
            raise UnknownModel(
                f"unknown local model {name!r}: write 'local' (or 'local:{LOCAL_DEFAULT_ID}') "
                "for the default model, or 'local:/path/to/ctranslate2-model-dir' for another"
            )
        directory = name
    model_id = LOCAL_DEFAULT_ID if not directory else directory.rstrip("/").rsplit("/", 1)[-1]
    return Model(
        id=model_id or LOCAL_DEFAULT_ID,
        provider="local",
        api="local",
        base_url=directory,
        name=model_id or LOCAL_DEFAULT_ID,
        context_window=8192,
        max_output=2048,
        images=False,
    )


def provider_names() -> list[str]:
    """Every provider name `model` accepts before the colon (plug-in wire formats too)."""
    _ensure_builtin()
    names = {m.provider for m in _REGISTRY.values()} | set(_ENDPOINTS) | set(_API_ALIASES)
    names |= set(_PROVIDER_ALIASES) | set(plugin_api_names())
    names.add("local")
    return sorted(names)


def _is_url(text: str) -> bool:
    return text.startswith(("http://", "https://"))


def model(name: str, *, base_url: str | None = None, id: str | None = None) -> Model:
    """Any model by name: a known one, any id of a known provider, or any server by URL.

    - ``"openai:gpt-4o-mini"``: the catalogue entry (with its prices);
    - ``"openai:gpt-5.9"``, ``"bedrock:eu.anthropic.claude-…"``: an id the catalogue
      does not list is configured like its closest catalogued relative (the same
      model in another region or with a date stamp, else its family), and the first
      use logs one warning naming what was assumed;
    - ``"ollama:llama3.2"``: any model id of a local server;
    - ``"lines:tiny"`` with ``base_url``: a wire format added with ``register_api``;
    - ``"openai-responses:gpt-5"``: the same model over the Responses API;
    - ``"vllm:Qwen/Qwen3-8B"``, ``"lmstudio:…"``, ``"llamacpp:…"``: local OpenAI-compatible
      servers on their usual ports; ``"openai-compatible:id"`` with ``base_url`` for any other;
    - ``"azure:deployment"`` with ``base_url="https://RESOURCE.openai.azure.com"``;
    - ``"http://localhost:8080/v1"`` (with ``id=`` the model id): an OpenAI-compatible server;
    - ``"local"``, ``"local:/path/to/model-dir"``: the local CTranslate2 model (see
      `local_model`), streamed by every shell like a provider.

    ``base_url`` replaces the model's endpoint: the server root or the API root,
    with or without the version path (see "Any model on any endpoint" in the documentation).
    Raises `UnknownModel` naming the providers it knows.
    """
    if _is_url(name):
        return openai_compatible(id or "default", base_url or name)
    if name == "local" or name.startswith("local:"):
        return local_model(name.partition(":")[2], base_url=base_url)
    _ensure_builtin()
    found = _REGISTRY.get(name)
    if found is None and ":" not in name:
        found = get_model(name)  # a bare id: the registry's rules and error message
    if found is None:
        provider, _, model_id = name.partition(":")
        if provider in _PROVIDER_ALIASES:
            return model(f"{_PROVIDER_ALIASES[provider]}:{model_id}", base_url=base_url, id=id)
        if not model_id:
            raise UnknownModel(f"model {name!r} names no model id; write {provider}:MODEL-ID")
        found = _template(provider, model_id)
    if base_url:
        found = msgspec.structs.replace(found, base_url=base_url.rstrip("/"))
    if not found.base_url:
        raise UnknownModel(
            f"{found.provider} models need a base URL: pass base_url= "
            "(on the command line, --base-url URL)"
        )
    _warn_if_assumed(found)
    return found


def _template(provider: str, model_id: str) -> Model:
    if provider in _API_ALIASES:
        real, api = _API_ALIASES[provider]
        known = _REGISTRY.get(f"{real}:{model_id}")
        base = known or _template(real, model_id)
        return msgspec.structs.replace(base, api=api)
    same = [m for m in _REGISTRY.values() if m.provider == provider]
    if same:
        return _assumed(provider, model_id, same)
    if provider in _ENDPOINTS:
        api, url = _ENDPOINTS[provider]
        return Model(id=model_id, provider=provider, api=api, base_url=url, name=model_id)
    if provider in plugin_api_names():
        # a plug-in wire format: its server's address comes with base_url
        return Model(id=model_id, provider=provider, api=provider, base_url="", name=model_id)
    raise UnknownModel(
        f"unknown provider {provider!r}; known providers: {', '.join(provider_names())} "
        "(`streamfn models` lists the known models)"
    )


def _assumed(provider: str, model_id: str, same: list[Model]) -> Model:
    """An id of a catalogued provider that nobody listed: its closest relative's settings
    (or today's defaults when it has none), and one warning saying which."""
    from ._families import describe, relative

    assert _info is not None
    found = relative(provider, model_id, same)
    if found is None:
        like, how = None, "defaults"
        first = same[0]
        derived = Model(
            id=model_id,
            provider=provider,
            api=first.api,
            base_url=first.base_url,
            name=model_id,
            headers=first.headers,
            extra=first.extra,
            source="assumed: defaults",
        )
    else:
        like, how = found
        derived = msgspec.structs.replace(
            like,
            id=model_id,
            name=model_id,
            source=f"assumed like {like.key} ({how})",
            # a relative's own request rules are its own; the family's rules still match
            capabilities=like.capabilities if how == "the same model" else None,
        )
    derived = _assumed_lifecycle(derived, like, how)
    _PENDING[derived.key] = describe(derived, like, how, f"{_info.source}, {_info.origin}")
    return derived


def _warn_if_assumed(found: Model) -> None:
    """The one warning for an id configured by assumption, once it is about to be used."""
    said = _PENDING.pop(found.key, None)
    if said is not None and found.key not in _ASSUMED:
        _ASSUMED.add(found.key)
        log.warning("%s", said.text, extra=cli_words(said.cli_text))


_loaded = False
_loader: Callable[[], object] | None = None


def set_catalog_loader(loader: Callable[[], object] | None) -> None:
    """Have the registry call ``loader`` before its next lookup, to choose its catalogue.

    The core reads no files and no environment; a shell passes the function
    that does (`streamfn.io_common._catalog_cache.load_user_catalog`: the newer of
    the built-in and cached data, or ``STREAMFN_MODELS_FILE``), so a program
    sees what ``streamfn models --refresh`` fetched. It runs once; a loader that
    raises (an unreadable ``STREAMFN_MODELS_FILE``) raises again at the next lookup.
    """
    global _loader
    _loader = loader


def _ensure_builtin() -> None:
    """Import the built-in catalogue lazily so importing the core stays cheap; then let
    a loader set with `set_catalog_loader` choose a newer one."""
    global _loaded, _info, _loader
    if not _loaded:
        _loaded = True
        from . import _catalog as catalog

        _install(catalog.BUILTIN_MODELS)
        _info = CatalogInfo(
            origin=BUILTIN,
            source=catalog.describe_source(catalog.BUILTIN_DOCUMENT),
            date=str(catalog.BUILTIN_DOCUMENT["source"]["date"]),
            models=len(catalog.BUILTIN_MODELS),
        )
        _read_end_of_life(catalog.BUILTIN_DOCUMENT)
    if _loader is not None:
        loader, _loader = _loader, None
        try:
            loader()
        except BaseException:
            _loader = loader
            raise
