"""Where the library's log records go when the command line runs: stderr.

The library speaks only when its program asks (its ``streamfn`` logger has a
``NullHandler``, after the Python logging HOWTO for libraries). The command line
is such a program: it shows the library's warnings (retries, a deprecated model,
the gateway's operator log) on stderr, as their text alone, the way Python
showed them before any handler was set.
"""

from __future__ import annotations

import logging
import sys
from typing import TextIO

__all__ = ["show_library_warnings"]


class _Stderr(logging.StreamHandler[TextIO]):
    """Writes to whatever ``sys.stderr`` is at the time (a test may swap it)."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)
        self.setLevel(logging.WARNING)

    @property
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, value: TextIO) -> None:
        pass


def show_library_warnings() -> None:
    """Send the ``streamfn`` logger's warnings to stderr (once per process)."""
    logger = logging.getLogger("streamfn")
    if not any(isinstance(handler, _Stderr) for handler in logger.handlers):
        logger.addHandler(_Stderr())
