"""docs/design.md matches the tree: the layout it draws is the one on disk.

- every folder of the library (each package and subpackage, every dialect) is
  named in the layout, so every module is in a named folder;
- every folder the layout names, and every file the page names, exists;
- the library's own docstrings and comments cite only documents that exist.
"""

from __future__ import annotations

import re
from pathlib import Path

from test_layout import PACKAGES

ROOT = Path(__file__).resolve().parents[2]
DESIGN = ROOT / "docs" / "design.md"
#: every library folder: the packages the layout rules walk, and ``streamfn`` itself
LIBRARY = (*PACKAGES, "entry")
#: a folder in the layout drawing: ``name/`` not inside a longer path or a word
FOLDER = re.compile(r"(?<![\w/.<>-])([a-z][a-z0-9_]*)/(?![\w<])")
#: a file the page names: a path or a file name with a known suffix
FILE = re.compile(r"(?<![\w/.<>-])((?:\.?[\w-]+/)*[\w.-]+\.(?:py|md|yml|toml))\b")
#: a document a module cites (``DESIGN.md``, ``fuzz/README.md``)
CITED = re.compile(r"(?<![\w/.-])((?:[\w-]+/)*[\w-]+\.md)\b")


def layout_block(text: str) -> str:
    """The first fenced block after ``## Layout``: the drawing of the tree."""
    section = text.split("\n## Layout", 1)[1]
    return section.split("```", 2)[1]


def library_folders() -> set[str]:
    """Every folder of the library that holds modules, by name."""
    return {
        path.parent.name
        for top in LIBRARY
        for path in (ROOT / top).rglob("*.py")
        if ".venv" not in path.parts
    }


def named_folders() -> set[str]:
    return set(FOLDER.findall(layout_block(DESIGN.read_text())))


def test_every_library_folder_is_in_the_layout() -> None:
    assert sorted(library_folders() - named_folders()) == []


def test_every_folder_the_layout_names_exists() -> None:
    on_disk = {
        path.name
        for path in ROOT.rglob("*")
        if path.is_dir() and not {".git", ".venv", "node_modules"} & set(path.parts)
    }
    assert sorted(named_folders() - on_disk) == []


def existing(name: str, *bases: Path) -> bool:
    return any((base / name).exists() for base in bases)


def test_every_file_the_page_names_exists() -> None:
    named = {n for n in FILE.findall(DESIGN.read_text()) if not n.startswith("__")}  # __init__.py
    assert named, "the finder sees the page's files"
    assert sorted(n for n in named if not existing(n, ROOT, ROOT / "docs")) == []


def test_the_library_cites_only_documents_that_exist() -> None:
    found = []
    for top in LIBRARY:
        for path in sorted((ROOT / top).rglob("*.py")):
            for name in CITED.findall(path.read_text()):
                if not existing(name, ROOT, ROOT / "docs", path.parent):
                    found.append(f"{path.relative_to(ROOT)}: {name}")
    assert found == []


def test_the_finders_find_folders_and_files() -> None:
    text = "core/  ├ wire/ see `tests/core/test_layout.py`, mkdocs.yml and <format>/ x/y"
    assert FOLDER.findall(text) == ["core", "wire"]
    assert FILE.findall(text) == ["tests/core/test_layout.py", "mkdocs.yml"]
    assert CITED.findall('"""see DESIGN.md and fuzz/README.md"""') == [
        "DESIGN.md",
        "fuzz/README.md",
    ]
