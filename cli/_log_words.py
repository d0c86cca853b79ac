"""The library's log records in the command line's words.

A record whose advice differs for a program and for a user of ``streamfn``
(see `streamfn.core._cli_words`) carries both; the command line shows its own,
so no user of the command is told to pass ``Options(api_key=...)`` or to state
``Model(...)`` fields. A filter on the ``streamfn`` logger does the swap, before
any handler sees the record, whichever handler prints it.
"""

from __future__ import annotations

import logging

from streamfn.core._cli_words import CLI_MESSAGE

__all__ = ["speak_to_the_command_line"]


class _CommandLineWords(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        text = getattr(record, CLI_MESSAGE, None)
        if isinstance(text, str):
            record.msg, record.args = text, ()
        return True


def speak_to_the_command_line() -> None:
    """Have the ``streamfn`` logger's records use the command line's words (once)."""
    logger = logging.getLogger("streamfn")
    if not any(isinstance(f, _CommandLineWords) for f in logger.filters):
        logger.addFilter(_CommandLineWords())
