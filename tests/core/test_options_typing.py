"""`Options` as users write it: the typing view type checkers read matches the
struct's fields, and ``thinking`` takes the strings users write."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import msgspec
import pytest

from streamfn.core import Options


def test_the_typing_view_of_options_matches_its_fields() -> None:
    """`Options.__init__` as type checkers see it (to take ``thinking="high"``) lists the
    struct's fields in order with the same defaults."""
    source = Path(importlib.import_module("streamfn.core._options").__file__ or "").read_text()
    stub = next(
        node
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.FunctionDef) and node.name == "__init__"
    )
    names = [a.arg for a in stub.args.kwonlyargs]
    assert names == list(Options.__struct_fields__)
    defaults = [
        eval(compile(ast.Expression(d), "<stub>", "eval")) if d is not None else None
        for d in stub.args.kw_defaults
    ]
    assert defaults == [getattr(Options(), f) for f in Options.__struct_fields__], (
        "a default in the typing view differs from the field's"
    )


def test_thinking_takes_the_strings_users_write() -> None:
    from streamfn.core import ThinkingLevel

    assert Options(thinking="high").thinking is ThinkingLevel.HIGH
    decoded = msgspec.json.decode(b'{"thinking": "low"}', type=Options)
    assert decoded.thinking is ThinkingLevel.LOW
    with pytest.raises(ValueError):
        Options(thinking="extreme")  # type: ignore[arg-type]
