"""``streamfn chat``: stream an answer from the local model or from any provider.

One prompt from the argument or stdin, or an interactive multi-turn chat when
stdin is a terminal; ``--json`` prints every event as one JSON line. The local
model runs on trio in this process; providers are reached through the trio
shell (`streamfn.io_trio`), both imported only when the command runs.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Iterator
from typing import Any

from streamfn.core.accumulate import accumulate
from streamfn.core.events import Error, ErrorKind, Event, encode_event_json
from streamfn.core.messages import AssistantMessage, Context, Message, UserMessage
from streamfn.core.options import Options, ThinkingLevel

from .command import EXIT_OK, EXIT_USAGE, Command, CommandError, leaves
from .model_dir import LOCAL_EXTRA_HINT, LOCAL_PREFIX, add_model_dir, model_dir, require_prepared
from .progress import progress_printer
from .render import Renderer

__all__ = ["COMMAND"]


class _Transcript:
    """Keeps what the assistant said, for the next turn of an interactive chat."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def message(self) -> AssistantMessage:
        return accumulate(self.events)


def _configure(parser: argparse.ArgumentParser) -> None:
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
    add_model_dir(parser)


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


def _local_opener(args: argparse.Namespace) -> StreamOpener:
    from ..fetch import PrepareError, default_model_dir

    try:  # what loading needs, checked before any work (prepare checks its own)
        import ctranslate2  # noqa: F401
        import jinja2  # noqa: F401
        import tokenizers  # noqa: F401

        from ..model import LocalModel
    except ImportError as exc:
        raise CommandError(
            f"the local model needs packages that are not installed ({exc}); {LOCAL_EXTRA_HINT}, "
            "or chat with a provider instead (-m openai:gpt-4o-mini, -m ollama:llama3.2 ...)"
        ) from exc
    directory = model_dir(args)
    try:
        require_prepared(directory)
        model = LocalModel.default(directory, progress=progress_printer())
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


def _run(args: argparse.Namespace) -> int:
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
            failure = next((e for e in leaves(exc) if isinstance(e, CommandError)), None)
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


COMMAND = Command("chat", "stream an answer (local model by default)", _configure, _run)
