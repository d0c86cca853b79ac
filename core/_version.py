"""streamfn's version, from the installed distribution's metadata.

Read on first use (``streamfn.core.__version__``), not at import: the core
stays cheap to import. Running from a source tree that was never installed
gives `UNKNOWN_VERSION`, so a bug report still says where the code came from.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from typing import Final

__all__ = ["UNKNOWN_VERSION", "installed_version"]

#: the version of code that was never installed (a bare checkout on sys.path)
UNKNOWN_VERSION: Final = "0+unknown"


def installed_version(distribution: str = "streamfn") -> str:
    """The installed version of ``distribution``, or `UNKNOWN_VERSION`."""
    try:
        return version(distribution)
    except PackageNotFoundError:
        return UNKNOWN_VERSION
