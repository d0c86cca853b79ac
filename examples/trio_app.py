"""Stream an answer from a provider in a trio program, then ask for a whole message.

Run: ANTHROPIC_API_KEY=... OPENAI_API_KEY=... python examples/trio_app.py  (needs the [trio] extra)
A failed call (a bad or missing key, a dropped connection) raises `StreamError`
(`CompletionError` from `complete`): the program says why in one line and exits non-zero.
"""

import trio

from streamfn.core import Context, Options, StreamError, TextDelta, get_model
from streamfn.io_trio import complete, stream


async def main() -> None:
    model = get_model("anthropic:claude-sonnet-4-6")
    question = Context.of("Why is the sky blue?")
    async with stream(model, question, Options(max_tokens=300), raise_on_error=True) as events:
        async for event in events:
            if isinstance(event, TextDelta):
                print(event.delta, end="", flush=True)
    print()
    # the whole answer at once; a failure raises CompletionError
    message = await complete(get_model("openai:gpt-4o-mini"), Context.of("Say hi"))
    print(message.text, message.usage, message.cost)


if __name__ == "__main__":
    try:
        trio.run(main)
    except StreamError as exc:  # CompletionError too
        raise SystemExit(f"\nfailed: {exc}") from None
