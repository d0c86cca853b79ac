"""Which build of the streaming hot path runs: compiled by mypyc, or pure Python.

An opted-in build (``STREAMFN_COMPILE=1``, docs/benchmarks.md) compiles the framing,
the response machines, the emitter and the fold from the same sources into extension
modules, which Python imports in place of the ``.py`` files; every other build runs
those files. Bug reports and benchmarks need to know which one ran.
"""

from __future__ import annotations

from importlib.machinery import EXTENSION_SUFFIXES

from . import _emitter

__all__ = ["hot_path_compiled"]


def hot_path_compiled() -> bool:
    """True when the hot path's modules are mypyc's extension modules (one is asked:
    a build compiles them all or, failing, none)."""
    return (_emitter.__file__ or "").endswith(tuple(EXTENSION_SUFFIXES))
