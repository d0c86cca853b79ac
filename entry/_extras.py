"""What an optional dependency's absence says: the extra that brings it, worded once.

Every place that needs a package of an extra (a shell's face, a lazily imported
name, ``streamfn serve``, the local model, a ``python -m streamfn.fuzz.<target>``)
words its error through `extra_hint`, so each says the same thing: which
package is missing, which extra installs it, and the command. `require` is the
check done before any work (an import, a download). It lives beside
``__main__`` in `streamfn` itself, so a face can use it without importing
anything else.
"""

from __future__ import annotations

import importlib
from typing import Final

__all__ = ["EXTRA_OF", "extra_hint", "missing_extra", "require"]

#: a top-level module an extra brings -> that extra (``pyproject.toml``'s own table)
EXTRA_OF: Final[dict[str, str]] = {
    "trio": "trio",
    "hypercorn": "serve",
    "ctranslate2": "local",
    "gguf": "local",
    "tokenizers": "local",
    "jinja2": "local",
    "numpy": "local",
    "hypothesis": "fuzz",
    "atheris": "atheris",
    "botocore": "atheris",
    "opentelemetry": "otel",
    "prometheus_client": "serve",
    "psycopg": "team",
}


def extra_hint(extra: str) -> str:
    """How to install ``extra``, from a package index or from a checkout."""
    return (
        f"install the [{extra}] extra: `pip install 'streamfn[{extra}]'` (from a checkout: "
        f"`pip install --config-settings editable_mode=strict -e '.[{extra}]'`)"
    )


def missing_extra(what: str, exc: ImportError, extra: str | None = None) -> ModuleNotFoundError:
    """The error for ``what`` (a module, a command) failing on ``exc``: the missing
    module, and the extra that brings it (``extra``, else looked up in `EXTRA_OF`)."""
    name = exc.name or ""
    chosen = extra or EXTRA_OF.get(name.split(".")[0], "")
    hint = extra_hint(chosen) if chosen else "install it"
    return ModuleNotFoundError(
        f"{what} needs {name or exc}, which is not installed; {hint}", name=name
    )


def require(what: str, extra: str, *modules: str) -> None:
    """Import ``modules`` now, before any work; raise `missing_extra` naming ``extra``
    for the first one that is not installed."""
    for module in modules:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name is None or module.split(".")[0] != exc.name.split(".")[0]:
                raise  # a module of ours is broken, not an extra missing
            raise missing_extra(what, exc, extra) from None
