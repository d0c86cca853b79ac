"""A log message in the command line's words, carried beside the library's.

Some warnings tell the reader what to change, and the change differs by who
reads: a program states a model's settings with ``Model(...)`` fields or passes
``Options(api_key=...)``; a user of the ``streamfn`` command sets a flag or an
environment variable. Such a record carries both: its message speaks to a
program, and `CLI_MESSAGE` (an attribute on the record, set with
``extra=cli_words(text)``) says the same to the command line, which shows that
one instead. The core stays unaware of who is reading; nothing else changes.
"""

from __future__ import annotations

from typing import Final

__all__ = ["CLI_MESSAGE", "cli_words"]

#: the log record attribute holding the message in the command line's words
CLI_MESSAGE: Final = "streamfn_cli_message"


def cli_words(text: str) -> dict[str, str]:
    """The ``extra=`` of a log call whose advice the command line words as ``text``."""
    return {CLI_MESSAGE: text}
