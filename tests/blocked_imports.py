"""Python code that makes some top-level packages unimportable, as if not installed:
prepend it (formatted with ``blocked``, a set of names) to a ``python -c`` program."""

from __future__ import annotations

from typing import Final

__all__ = ["BLOCKER", "blocking"]

BLOCKER: Final = """
import sys

class _NotInstalled:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {blocked!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None

sys.meta_path.insert(0, _NotInstalled())
"""


def blocking(blocked: tuple[str, ...] | set[str], code: str) -> str:
    """``code`` run with the ``blocked`` packages missing."""
    return BLOCKER.format(blocked=set(blocked)) + code
