"""Two calls on one kept-alive connection from an asyncio program.

Run: OPENAI_API_KEY=... python examples/asyncio_app.py  (needs the [asyncio] extra)
A failed call (a bad or missing key, a dropped connection) raises `StreamError` /
`CompletionError`: the program says why in one line and exits non-zero.
"""

import asyncio

from streamfn.core import Context, StreamError, TextDelta, get_model
from streamfn.io_asyncio import Client


async def main() -> None:
    model = get_model("openai:gpt-4o-mini")
    async with Client() as client:  # keeps the connection open between calls
        async with client.stream(model, Context.of("Say hi"), raise_on_error=True) as events:
            async for event in events:
                if isinstance(event, TextDelta):
                    print(event.delta, end="", flush=True)
        print()
        print((await client.complete(model, Context.of("Say hi again"))).text)


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except StreamError as exc:  # CompletionError too
        raise SystemExit(f"\nfailed: {exc}") from None
