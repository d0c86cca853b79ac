"""One set of numbers: each figure the README and the home page quote is measured in
docs/benchmarks.md, or counted from the code or the recordings it describes.

- a measurement (a ratio ``95×``, a time ``1.4–2.8 s`` or ``0.46 ms``, a share
  ``2%``) must appear, as written, in docs/benchmarks.md, which says how and when
  it was measured;
- "ten wire formats" is the number of dialect packages (one per wire format);
- "81 real recorded streams" is the number of recordings in the corpus index;
- "16,860 request bodies" is the figure the providers page explains.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from corpus_support import corpus_dir
from test_exported_members import PACKAGES

ROOT = Path(__file__).resolve().parents[2]
PAGES = ["README.md", "docs/index.md"]
BENCHMARKS = (ROOT / "docs" / "benchmarks.md").read_text()
#: a measured figure: a number or a range, then its unit
FIGURE = re.compile(r"(?<![\w.])\d[\d.,]*(?:–\d[\d.,]*)?(?:×|\s?(?:ms|µs|s)\b|%)")
#: the counts a page spells out
WORDS = {"eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12}


def prose(page: str) -> str:
    """The page without its code blocks (a ``timeout=2.5`` is not a claim)."""
    return re.sub(r"```.*?```", "", (ROOT / page).read_text(), flags=re.S)


def _number(word: str) -> int:
    return WORDS[word] if word in WORDS else int(word.replace(",", ""))


def test_the_figure_finder_finds_each_kind() -> None:
    text = "95× LiteLLM at 76–86× less CPU, 1.4–2.8 s, 0.46 ms, 2%, 2-core, v1.2, 16,860 bodies"
    assert FIGURE.findall(text) == ["95×", "76–86×", "1.4–2.8 s", "0.46 ms", "2%"]


@pytest.mark.parametrize("page", PAGES)
def test_every_measured_figure_is_in_the_benchmarks(page: str) -> None:
    figures = FIGURE.findall(prose(page))
    assert figures, f"{page} quotes no figure: the finder is broken"
    missing = [figure for figure in figures if figure not in BENCHMARKS]
    assert missing == [], f"{page} quotes figures docs/benchmarks.md does not measure"


@pytest.mark.parametrize("page", PAGES)
def test_the_wire_formats_counted_are_the_dialects(page: str) -> None:
    counts = re.findall(r"\b(\w+)\s+wire\s+formats\b", prose(page))
    dialects = [p for p in PACKAGES if p.startswith("streamfn.core.dialects.")]
    assert counts, f"{page} no longer counts the wire formats: drop this test"
    assert {_number(word) for word in counts} == {len(dialects)}


@pytest.mark.parametrize("page", [*PAGES, "docs/providers.md"])
def test_the_recordings_counted_are_the_corpus(page: str) -> None:
    counts = re.findall(
        r"\b(\d+)\s+real\s+recorded\s+streams|\bevery\s+one\s+of\s+(\d+)\s+real", prose(page)
    )
    assert counts, f"{page} no longer counts the recordings: drop it from this test"
    recordings = json.loads((corpus_dir() / "index.json").read_text())
    assert {_number(a or b) for a, b in counts} == {len(recordings)}


@pytest.mark.parametrize("page", PAGES)
def test_the_request_bodies_counted_are_the_providers_page(page: str) -> None:
    explained = re.findall(
        r"([\d,]+)\s+bodies,\s+every\s+one\s+accepted", prose("docs/providers.md")
    )
    quoted = re.findall(r"([\d,]+)\s+request\s+bodies", prose(page))
    assert quoted and explained and set(quoted) == set(explained)
