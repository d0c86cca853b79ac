"""The first token leaves the server before the rest of an answer that arrived at once.

An upstream often hands over many deltas in one socket read, and a backend
can yield them all without awaiting anything. Putting an event into a queue
with room does not suspend the producer, so without a deliberate yield the
whole answer was decoded and queued before the first byte went to the client
(time to first token = time to decode the read).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from streamfn.asgi import ServerConfig
from streamfn.core import Done, Start, StopReason, TextDelta, TextEnd, TextStart, Usage
from streamfn.fuzz._events_backend import EventsBackend
from streamfn.io_asyncio._server import App

N = 200


class _Counting(EventsBackend):
    """Yields the whole answer without awaiting, counting what it has produced."""

    produced = 0

    async def _events(self, events: list[Any]) -> Any:
        for event in events:
            self.produced += 1
            yield event


def test_the_first_delta_is_sent_before_the_backend_produced_the_rest() -> None:
    events: list[Any] = [Start(model="m"), TextStart(0)]
    events += [TextDelta(0, f" w{i}") for i in range(N)]
    events += [TextEnd(0), Done(stop_reason=StopReason.STOP, usage=Usage(input=1, output=N))]
    backend = _Counting({"m": events})
    app = App(backend, ServerConfig())
    body = json.dumps(
        {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    ).encode()
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/v1/chat/completions",
        "headers": [(b"host", b"127.0.0.1"), (b"content-type", b"application/json")],
        "query_string": b"",
    }
    produced_at_first_delta: list[int] = []
    sent: list[bytes] = []

    async def main() -> None:
        done = asyncio.Event()
        messages = [{"type": "http.request", "body": body, "more_body": False}]

        async def receive() -> dict[str, Any]:
            if messages:
                return messages.pop()
            await done.wait()
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.body":
                chunk = message.get("body", b"")
                if b'"content":" w0"' in chunk and not produced_at_first_delta:
                    produced_at_first_delta.append(backend.produced)
                sent.append(chunk)
                if not message.get("more_body"):
                    done.set()

        await app(scope, receive, send)

    asyncio.run(main())
    whole = b"".join(sent)
    assert whole.count(b'"content":" w') == N and whole.endswith(b"data: [DONE]\n\n")
    assert produced_at_first_delta and produced_at_first_delta[0] < N // 2
