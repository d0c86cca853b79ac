"""``streamfn chat``: stream an answer from the local model or from any provider.

One prompt from the argument or stdin, or an interactive multi-turn chat when
stdin is a terminal; ``--json`` prints every event as one JSON line. Every
model, the local one included, is reached through the blocking shell
(`streamfn.io_sync`), which a plain ``pip install streamfn`` provides.

An answer that stops at the token cap says so (a notice on stderr;
``stop_reason: length`` in ``--json``). In the interactive chat, Ctrl-C ends
the answer being written, keeps what was said (marked as interrupted) and
returns to the prompt; Ctrl-C at the prompt, Ctrl-D or an empty line ends
the chat.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Iterator
from typing import Final

import msgspec

from streamfn.core import (
    AssistantMessage,
    Context,
    Done,
    Error,
    Event,
    Message,
    Model,
    Options,
    Start,
    StopReason,
    TextContent,
    ThinkingLevel,
    UserMessage,
    accumulate,
)
from streamfn.core._events import encode_event_json

from ._command import EXIT_OK, EXIT_USAGE, Command, CommandError, leaves
from ._flags import check_base_url
from ._model_dir import LOCAL_PREFIX, add_model_dir
from ._progress import progress_printer
from ._render import Renderer

__all__ = ["COMMAND", "DEFAULT_LOCAL_MAX_TOKENS", "LOCAL_REPETITION_GUARD"]

#: the local chat's cap on generated tokens unless --max-tokens says otherwise: a
#: small model's useful answers fit (a few seconds on a laptop CPU), a runaway one stops
DEFAULT_LOCAL_MAX_TOKENS: Final = 512

#: the local chat's repetition guard (CTranslate2's knobs, see `streamfn.local._model`):
#: small models decoding greedily fall into loops; this mild penalty breaks them and
#: leaves short factual answers meaningful ("The capital of France is Paris ...")
LOCAL_REPETITION_GUARD: Final = {"repetition_penalty": 1.1}

#: how an answer Ctrl-C ended is marked in the conversation
INTERRUPTED_MARK: Final = " [interrupted by the user]"


class _Transcript:
    """What the assistant said in one turn, kept as it streams (so Ctrl-C keeps it too)."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def message(self) -> AssistantMessage:
        return accumulate(self.events)

    def interrupted(self) -> AssistantMessage:
        """The partial answer as the conversation keeps it: its text so far, then a mark.

        Only the text: a thinking block or a tool call cut off half-way cannot
        be replayed (providers skip a whole turn that ended aborted, so the
        model would not see what it said). The mark tells the model, and the
        reader of a saved conversation, that the user stopped the answer here.
        """
        partial = accumulate(self.events)
        text = "".join(b.text for b in partial.content if isinstance(b, TextContent))
        return msgspec.structs.replace(
            partial, content=[TextContent(text=f"{text}{INTERRUPTED_MARK}")], error_message=None
        )


def _configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("prompt", nargs="?", help="the question; '-' or a pipe reads stdin")
    parser.add_argument(
        "-m",
        "--model",
        default=LOCAL_PREFIX,
        metavar="PROVIDER:MODEL",
        help="e.g. openai:gpt-4o-mini (see `streamfn models`); default: the local model",
    )
    parser.add_argument("--system", metavar="TEXT", help="system prompt")
    parser.add_argument(
        "--max-tokens",
        type=int,
        metavar="N",
        help=f"cap on generated tokens (local model default: {DEFAULT_LOCAL_MAX_TOKENS}); "
        "an answer cut at the cap says so",
    )
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


def _options(args: argparse.Namespace, local: bool) -> Options:
    if args.max_tokens is not None and args.max_tokens < 1:
        raise CommandError("--max-tokens must be at least 1", EXIT_USAGE)
    if args.temperature is not None and args.temperature < 0:
        raise CommandError("--temperature must be 0 or more", EXIT_USAGE)
    max_tokens = args.max_tokens
    if max_tokens is None and local:
        max_tokens = DEFAULT_LOCAL_MAX_TOKENS
    return Options(
        max_tokens=max_tokens,
        temperature=args.temperature,
        thinking=ThinkingLevel(args.thinking) if args.thinking else None,
        extra_body=dict(LOCAL_REPETITION_GUARD) if local else None,
    )


def _read_prompt(args: argparse.Namespace) -> str | None:
    """The one-shot prompt, or None for the interactive mode."""
    if args.interactive:
        if args.prompt is not None:
            raise CommandError("--interactive takes no prompt argument", EXIT_USAGE)
        return None
    if args.prompt is not None and args.prompt != "-":
        if not args.prompt.strip():
            raise CommandError(
                'the prompt is empty: write the question (streamfn chat "Hi"), or give '
                "no prompt for an interactive chat",
                EXIT_USAGE,
            )
        return str(args.prompt)
    if args.prompt == "-" or not sys.stdin.isatty():
        text = sys.stdin.read().strip()
        if not text:
            raise CommandError("the prompt from stdin is empty", EXIT_USAGE)
        return text
    return None


def _is_local(name: str) -> bool:
    return name == LOCAL_PREFIX or name.startswith(LOCAL_PREFIX + ":")


def _choose(args: argparse.Namespace) -> Model:
    """The model ``-m`` names (``--base-url``/``--model-dir`` applied); usage errors exit 2."""
    from streamfn.core import UnknownModel, model

    local = _is_local(args.model)
    if local and (args.base_url or args.api_key_env):
        raise CommandError(
            "--base-url and --api-key-env are for providers; the local model takes "
            "--model-dir DIR (or -m local:/path/to/model-dir)",
            EXIT_USAGE,
        )
    if not local and args.model_dir is not None:
        raise CommandError("--model-dir is for the local model (-m local)", EXIT_USAGE)
    if args.base_url:
        check_base_url("--base-url", args.base_url)
    try:
        chosen = model(args.model, base_url=args.base_url)
    except UnknownModel as exc:
        raise CommandError(str(exc), EXIT_USAGE) from exc
    if local and args.model_dir is not None:
        chosen = msgspec.structs.replace(chosen, base_url=str(args.model_dir))
    return chosen


def _load_local(chosen: Model) -> None:
    """Load (and on first use prepare, with progress) the local model before the prompt."""
    from streamfn.local import LocalModelError
    from streamfn.local._provider import load_local

    try:
        load_local(chosen, os.environ, progress=progress_printer())
    except LocalModelError as exc:
        raise CommandError(
            f"{exc}; or chat with a provider instead (-m openai:gpt-4o-mini, "
            "-m ollama:llama3.2 ...)"
        ) from exc


def _with_key(args: argparse.Namespace, chosen: Model, options: Options) -> Options:
    """``options`` with the base URL and the credentials in, checked before any connection."""
    from streamfn.core import MissingCredentials, with_credentials

    if args.base_url:  # over OPENAI_BASE_URL and the like, too
        options = msgspec.structs.replace(options, base_url=chosen.base_url)
    if args.api_key_env:
        key = os.environ.get(args.api_key_env)
        if not key:
            raise CommandError(f"--api-key-env {args.api_key_env}: that variable is not set")
        options = msgspec.structs.replace(options, api_key=key)
    try:
        return with_credentials(chosen, options, os.environ)
    except MissingCredentials as exc:
        raise CommandError(_missing_key_fix(exc)) from exc


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


Turn = Callable[[Context, _Transcript], None]


def _turns(args: argparse.Namespace, chosen: Model, options: Options) -> Turn:
    """One answer per call, streamed to stdout through the blocking shell."""
    try:
        from streamfn.io_sync import stream
    except ImportError as exc:  # h11 is a dependency of streamfn itself
        raise CommandError(
            f"talking to models needs h11, a dependency of streamfn ({exc}): reinstall it "
            "with `pip install --force-reinstall streamfn` (from a checkout: "
            "`pip install --config-settings editable_mode=strict -e .`)"
        ) from exc
    out = sys.stdout
    color = out.isatty() and not os.environ.get("NO_COLOR")

    def turn(context: Context, transcript: _Transcript) -> None:
        renderer = Renderer(out, color=color)
        with stream(chosen, context, options) as events:
            for event in events:
                transcript.events.append(event)
                if args.json:
                    out.write(encode_event_json(event).decode() + "\n")
                    out.flush()
                else:
                    renderer.event(event)
                if isinstance(event, Error):
                    answered = any(not isinstance(e, Start | Error) for e in transcript.events)
                    raise CommandError(_describe_error(event, chosen, answered=answered))
                if isinstance(event, Done) and event.stop_reason is StopReason.LENGTH:
                    sys.stderr.write(f"streamfn: {_cut_notice(options)}\n")

    return turn


def _cut_notice(options: Options) -> str:
    cap = f"the {options.max_tokens}-token cap" if options.max_tokens else "the model's token cap"
    return f"the answer stopped at {cap} (stop_reason: length); --max-tokens N allows more"


def _describe_error(error: Error, chosen: Model, *, answered: bool) -> str:
    """The failure in one line: the model stopped (``answered``: output came first), or
    the call failed before any answer (no connection, no key, a refusal)."""
    from ._hints import error_hint

    kind = f" ({error.kind.value})" if error.kind else ""
    what = "the model stopped with an error" if answered else "the call failed"
    text = f"{what}{kind}: {error.message}"
    hint = error_hint(error, chosen)
    return f"{text}; {hint}" if hint else text


def _run(args: argparse.Namespace) -> int:
    local = _is_local(args.model)
    options = _options(args, local)
    prompt = _read_prompt(args)
    chosen = _choose(args)
    if local:
        _load_local(chosen)
    else:
        options = _with_key(args, chosen, options)
    turn = _turns(args, chosen, options)
    if prompt is not None:
        turn(Context.of(prompt, system_prompt=args.system), _Transcript())
        return EXIT_OK
    return _interactive(args, turn)


def _interactive(args: argparse.Namespace, turn: Turn) -> int:
    """Multi-turn chat with line editing. A failed turn is reported and the chat goes on;
    Ctrl-C during an answer ends that answer (kept, marked as interrupted), not the chat."""
    _enable_line_editing()
    history: list[Message] = []
    sys.stderr.write(
        "interactive chat: Ctrl-C stops an answer; Ctrl-D, Ctrl-C at the prompt "
        "or an empty line ends the chat\n"
    )
    for line in _prompts():
        context = Context(messages=[*history, UserMessage(content=line)], system_prompt=args.system)
        transcript = _Transcript()
        try:
            turn(context, transcript)
        except KeyboardInterrupt:
            sys.stdout.write("\n")
            sys.stdout.flush()
            sys.stderr.write("streamfn: answer interrupted; the conversation goes on\n")
            history += [context.messages[-1], transcript.interrupted()]
            continue
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
    """Lines typed at the ``> `` prompt until an empty line or end of input.

    Ctrl-C here is not caught: it ends the chat (exit status 130).
    """
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
