"""The subcommands of ``streamfn``: a static table, in the order ``--help`` lists them.

Each command lives in its own module and is named here, so reading this file
tells every command there is; nothing registers itself on import.
`register_command` adds one more for a program that embeds this command line.
"""

from __future__ import annotations

from . import _chat as chat
from . import _keys as keys
from . import _local as local
from . import _models as models
from . import _replay as replay
from . import _serve as serve
from . import _usage as usage
from ._command import Command

__all__ = ["ADDED", "BUILTIN", "commands", "register_command"]

BUILTIN: tuple[Command, ...] = (
    chat.COMMAND,
    models.COMMAND,
    local.COMMAND,
    replay.COMMAND,
    serve.COMMAND,
    keys.COMMAND,
    usage.COMMAND,
)

#: commands added by `register_command`, by name (a built-in's name replaces it)
ADDED: dict[str, Command] = {}


def register_command(command: Command) -> Command:
    """Add (or replace) a subcommand; call before `main` builds the parser."""
    ADDED[command.name] = command
    return command


def commands() -> dict[str, Command]:
    """Every subcommand by name: the built-ins, then (or replaced by) the added ones."""
    return {**{command.name: command for command in BUILTIN}, **ADDED}
