"""A script without an event loop: the blocking shell, handling the `Error` event itself.

Run: OPENAI_API_KEY=... python examples/sync_script.py  (needs the [sync] extra)
Exit status 1 and the error's kind on stderr when the call fails (a missing key
too: an `auth` error naming the variable to set, before anything is sent).
"""

import sys

from streamfn.core import Context, Error, TextDelta, get_model
from streamfn.io_sync import stream


def main() -> int:
    model = get_model("openai:gpt-4o-mini")
    with stream(model, Context.of("Say hi")) as events:
        for event in events:
            if isinstance(event, TextDelta):
                print(event.delta, end="", flush=True)
            elif isinstance(event, Error):  # a failed call's last event
                print(f"\nfailed ({event.kind}): {event.message}", file=sys.stderr)
                return 1
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
