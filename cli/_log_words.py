"""The library's log records in the command line's words.

A record whose advice differs for a program and for a user of ``streamfn``
(see `streamfn.core._cli_words`) carries both; while a command runs, the
command line shows its own, so no user of the command is told to pass
``Options(api_key=...)`` or to state ``Model(...)`` fields. A filter on the
``streamfn`` logger does the swap, before any handler sees the record,
whichever handler prints it; it is removed when the command ends, so a
program that calls `streamfn.cli.main` keeps its own words afterwards.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

from streamfn.core._cli_words import CLI_MESSAGE

__all__ = ["command_line_words"]


class _CommandLineWords(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        text = getattr(record, CLI_MESSAGE, None)
        if isinstance(text, str):
            record.msg, record.args = text, ()
        return True


@contextlib.contextmanager
def command_line_words() -> Iterator[None]:
    """The ``streamfn`` logger's records in the command line's words, inside."""
    logger = logging.getLogger("streamfn")
    words = _CommandLineWords()
    logger.addFilter(words)
    try:
        yield
    finally:
        logger.removeFilter(words)
