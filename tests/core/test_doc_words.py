"""Words a reader can place: the pages speak of what a reader can see.

- no "reference design 002" or "this round": a reader has neither the design
  documents nor the history of the work; pages name what they mean;
- an extra has one wording, "the `[trio]` extra", and every extra a page names
  (in that wording or in an install command) is one pyproject.toml declares; the
  asyncio and blocking shells come with "the plain install", never "no extra"
  or an extra that adds nothing.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").rglob("*.md"))]
EXTRAS = set(
    tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
)
#: extras kept so old install commands still work; they add nothing, so no page names them
ADD_NOTHING = {"asyncio", "sync"}

#: words from the work, not from the product
UNPLACEABLE = re.compile(
    r"reference designs?|\bdesigns? 00\d|\bthis round\b|\bround before\b", re.I
)
#: extras worded another way than "the `[x]` extra"
OTHER_WORDINGS = re.compile(
    r"\bno extra(?! \w)|\bwithout an extra\b|\bextra `\[|\(`\[\w+\]`\)|needs? the \[", re.I
)
#: an extra named: `[x]` in prose, 'streamfn[x]' or '.[x]' in a command
NAMED = re.compile(r"`\[([a-z,]+)\]`|streamfn\[([\w,]+)\]|\.\[([\w,]+)\]|\.whl\[([\w,]+)\]")


def _where(page: Path) -> str:
    return page.relative_to(ROOT).as_posix()


def test_the_finders_find_each_kind() -> None:
    assert UNPLACEABLE.findall("maps to reference designs 000; before this round") == [
        "reference designs",
        "this round",
    ]
    text = "(extra `[sync]`), no extra, the blocking shell (`[sync]`), needs the [asyncio] extra"
    assert len(OTHER_WORDINGS.findall(text)) == 4
    assert OTHER_WORDINGS.findall("the `[trio]` extra, the plain install") == []
    named = "the `[local]` extra; pip install 'streamfn[fuzz]'; -e '.[test,docs]'"
    assert [next(filter(None, m)) for m in NAMED.findall(named)] == ["local", "fuzz", "test,docs"]


@pytest.mark.parametrize("page", PAGES, ids=_where)
def test_a_page_uses_no_word_a_reader_cannot_place(page: Path) -> None:
    assert UNPLACEABLE.findall(page.read_text()) == []


@pytest.mark.parametrize("page", [p for p in PAGES if p.name != "CHANGELOG.md"], ids=_where)
def test_a_page_words_extras_one_way(page: Path) -> None:
    text = page.read_text()
    assert OTHER_WORDINGS.findall(text) == [], "say: the `[x]` extra, or: the plain install"
    named = {
        extra for match in NAMED.findall(text) for extra in next(filter(None, match)).split(",")
    }
    assert named <= EXTRAS, f"{_where(page)} names extras pyproject.toml does not declare"
    assert named & ADD_NOTHING == set(), "the asyncio and blocking shells: the plain install"
