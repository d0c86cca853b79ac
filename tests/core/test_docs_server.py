"""The manual's dev server and `streamfn serve` do not fight over a port: a reader who
runs both (reading the gateway guide while trying it) gets both, and the README gives
the address the dev server really has."""

from __future__ import annotations

import re
from pathlib import Path

from streamfn.cli._main import build_parser

ROOT = Path(__file__).resolve().parents[2]


def _dev_addr() -> str:
    found = re.search(r"^dev_addr:\s*(\S+)\s*$", (ROOT / "mkdocs.yml").read_text(), re.M)
    return found[1] if found else "127.0.0.1:8000"  # MkDocs' default when unset


def test_mkdocs_serve_and_streamfn_serve_default_to_different_ports() -> None:
    serve_port = build_parser().parse_args(["serve"]).port
    assert int(_dev_addr().rpartition(":")[2]) != serve_port


def test_the_readme_gives_the_docs_server_its_real_address() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    after = text.split("mkdocs serve", 1)[1]
    url = re.search(r"https?://[\w.:-]+", after)
    assert url is not None and url[0] == f"http://{_dev_addr()}"
