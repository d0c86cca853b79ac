"""``streamfn replay``: decode a recorded response body into events, offline.

For bug reports and for checking what streamfn makes of a provider's bytes:
every event is printed as one JSON line, then the folded final message. A
recording that ends in an error (or without an end) exits 1 after printing:
a cut answer is never reported as a complete one, and the final message of a
cut tool call carries its raw text and an error, never repaired arguments.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from streamfn.core import AssistantMessage, Done, Error, Event, replay
from streamfn.core._call import api_names
from streamfn.core._events import encode_event_json

from ._command import EXIT_OK, EXIT_RUNTIME, EXIT_USAGE, Command, CommandError

__all__ = ["COMMAND"]

_EPILOG = """\
examples:
  streamfn replay --api anthropic recording.sse
  streamfn replay --api openai-chat --provider groq groq.sse | jq -c 'select(.type=="done")'
  streamfn replay --api gemini --status 429 error-body.json
  curl -sN ... | streamfn replay --api openai-chat -
"""


def _configure(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = _EPILOG
    parser.add_argument(
        "--api", required=True, choices=sorted(api_names()), help="the wire format of the body"
    )
    parser.add_argument(
        "--provider",
        help="quirks within the format: azure, mistral, xai, groq, deepseek, openrouter ...",
    )
    parser.add_argument("--status", type=int, default=200, help="the HTTP status (default 200)")
    parser.add_argument(
        "--content-type", help="the response content type, to check it as a shell would"
    )
    parser.add_argument("--no-message", action="store_true", help="print the events only")
    parser.add_argument("file", help="the recorded response body, or - for stdin")


def _run(args: argparse.Namespace) -> int:
    if args.file == "-":
        body = sys.stdin.buffer.read()
    else:
        path = Path(args.file)
        if not path.is_file():
            raise CommandError(f"no such file: {path}", EXIT_USAGE)
        body = path.read_bytes()
    headers = [("content-type", args.content_type)] if args.content_type else []
    events = replay(args.api, body, provider=args.provider, status=args.status, headers=headers)
    out = sys.stdout
    for event in events:
        out.write(encode_event_json(event).decode() + "\n")
    if not args.no_message:
        from streamfn.core import accumulate

        message: AssistantMessage = accumulate(events)
        import msgspec

        out.write(msgspec.json.encode(message).decode() + "\n")
    out.flush()
    return _verdict(events)


def _verdict(events: list[Event]) -> int:
    """A recorded answer that ended in an error, or without an end, is a failure (exit 1),
    after its events and partial message are printed: never reported as a whole answer."""
    last = events[-1] if events else None
    if isinstance(last, Done):
        return EXIT_OK
    why = last.message if isinstance(last, Error) else "it ended without a terminal event"
    sys.stderr.write(f"streamfn: the recorded answer is not complete: {why}\n")
    return EXIT_RUNTIME


COMMAND = Command(
    "replay",
    "decode a recorded provider response into events (offline)",
    _configure,
    _run,
    description=(__doc__ or "").replace("``", ""),
)
