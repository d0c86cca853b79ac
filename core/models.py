"""The registry of known models, and the ways to name a model.

A `Model` (defined in `model_spec`, re-exported here) says where a model
lives (provider, wire api, base URL) and what it costs. The registry gives the well-known ones by ``provider:id``; anything
else (a vLLM or LM Studio server, a new model) is a `Model` built by hand or
`openai_compatible(...)`, so no model is ever out of reach.
"""

from __future__ import annotations

import msgspec

from .errors import UnknownModel
from .model_spec import Model, compute_cost

__all__ = [
    "API_NAMES",
    "Model",
    "UnknownModel",
    "compute_cost",
    "get_model",
    "list_models",
    "model",
    "openai_compatible",
    "provider_names",
    "register_model",
]

#: The wire formats streamfn speaks; `Model.api` is one of these.
API_NAMES = (
    "openai-chat",
    "openai-responses",
    "anthropic",
    "gemini",
    "ollama",
    "bedrock",
    "proxy",
    "agent-events",
    "ui-message-stream",
    "agui",
    "local",
)


_REGISTRY: dict[str, Model] = {}


def register_model(model: Model, *, replace: bool = True) -> Model:
    """Add or replace a model under ``provider:id``."""
    if not replace and model.key in _REGISTRY:
        raise ValueError(f"model {model.key!r} is already registered")
    _REGISTRY[model.key] = model
    return model


def list_models(provider: str | None = None) -> list[Model]:
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


def provider_names() -> list[str]:
    """Every provider name `model` accepts before the colon."""
    _ensure_builtin()
    names = {m.provider for m in _REGISTRY.values()} | set(_ENDPOINTS) | set(_API_ALIASES)
    names |= set(_PROVIDER_ALIASES)
    return sorted(names)


def _is_url(text: str) -> bool:
    return text.startswith(("http://", "https://"))


def model(name: str, *, base_url: str | None = None, id: str | None = None) -> Model:
    """Any model by name: a known one, any id of a known provider, or any server by URL.

    - ``"openai:gpt-4o-mini"``: the catalogue entry (with its prices);
    - ``"ollama:llama3.2"``, ``"groq:some-new-model"``: any model id of a provider
      (unknown ids are not priced: their cost is 0);
    - ``"openai-responses:gpt-5"``: the same model over the Responses API;
    - ``"vllm:Qwen/Qwen3-8B"``, ``"lmstudio:…"``, ``"llamacpp:…"``: local OpenAI-compatible
      servers on their usual ports; ``"openai-compatible:id"`` with ``base_url`` for any other;
    - ``"azure:deployment"`` with ``base_url="https://RESOURCE.openai.azure.com"``;
    - ``"http://localhost:8080/v1"`` (with ``id=`` the model id): an OpenAI-compatible server.

    ``base_url`` replaces the model's endpoint: the server root or the API root,
    with or without the version path (see the README's base-URL convention).
    Raises `UnknownModel` naming the providers it knows.
    """
    if _is_url(name):
        return openai_compatible(id or "default", base_url or name)
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
    return found


def _template(provider: str, model_id: str) -> Model:
    if provider in _API_ALIASES:
        real, api = _API_ALIASES[provider]
        known = _REGISTRY.get(f"{real}:{model_id}")
        base = known or _template(real, model_id)
        return msgspec.structs.replace(base, api=api)
    if provider in _ENDPOINTS:
        api, url = _ENDPOINTS[provider]
        return Model(id=model_id, provider=provider, api=api, base_url=url, name=model_id)
    same = [m for m in _REGISTRY.values() if m.provider == provider]
    if not same:
        raise UnknownModel(
            f"unknown provider {provider!r}; known providers: {', '.join(provider_names())} "
            "(`streamfn models` lists the known models)"
        )
    like = same[0]
    return Model(
        id=model_id,
        provider=provider,
        api=like.api,
        base_url=like.base_url,
        name=model_id,
        headers=like.headers,
        extra=like.extra,
    )


_loaded = False


def _ensure_builtin() -> None:
    """Import the built-in catalogue lazily so importing the core stays cheap."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    try:
        from . import catalog
    except ImportError:  # pragma: no cover - the catalogue ships with the package
        return
    for model in catalog.BUILTIN_MODELS:
        _REGISTRY.setdefault(model.key, model)
