"""A package face whose names are imported on first use (PEP 562).

Each face that uses it has its own reason: `streamfn.local` so the command line
starts fast and works without the ``[local]`` extra, `streamfn.fuzz` so its fake
provider works without hypothesis, and the two event-loop shells so that a program
that only streams does not import the server (their ``serve``).
The face keeps its names in ``__all__`` and under ``TYPE_CHECKING`` for type
checkers; this supplies the module ``__getattr__`` and ``__dir__`` that import
a name's home the first time it is read and keep it. It lives beside
``__main__`` in `streamfn` itself, which has no ``__init__`` to run: importing
it loads nothing else, so a lazy face stays cheap to import.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

from ._extras import EXTRA_OF, missing_extra

__all__ = ["lazy_face"]


def lazy_face(
    package: str, homes: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``, whose public names live in
    ``homes`` (name -> relative module, ``"._model"``). A name whose home needs a
    package of an extra that is not installed raises `missing_extra`, naming it."""

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        try:
            value = getattr(importlib.import_module(home, package), name)
        except ModuleNotFoundError as exc:
            if (exc.name or "").split(".")[0] not in EXTRA_OF:
                raise
            raise missing_extra(f"{package}.{name}", exc) from None
        vars(sys.modules[package])[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *homes})

    return __getattr__, __dir__
