"""Benchmark `streamfn serve`: events/s and time-to-first-byte, against a minimal reference.

Both servers run on hypercorn in their own process on loopback and stream the
same 20,000-event chat answer as OpenAI chunks:

- ours: the streamfn ASGI app with a recorded-events backend (events are
  encoded per request, through the producer task, queue and keep-alive loop);
- reference: a minimal ASGI app that writes the same pre-encoded chunks, one
  write per event, as a naive proxy does;
- floor: the same bytes in a single write (not streaming at all), the best
  hypercorn and the client can do.

Clients: the official openai SDK (``stream=True``), and a raw h11 client over a
blocking socket. Then 100 concurrent raw clients (asyncio + h11) each stream a
2,000-event answer. Results are printed as a table with ratios.

Run: ``.venv/bin/python bench/bench_server.py`` (``--events N``, ``--clients N``,
``--shell trio`` for all three servers on hypercorn's trio worker).
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import random
import socket
import statistics
import time
from typing import Any

import h11

WORDS = [
    "the",
    "model",
    "streams",
    "tokens",
    "as",
    "soon",
    "as",
    "it",
    "has",
    "them",
    "so",
    "users",
    "see",
    "text",
    "early",
]


def make_events(n: int, seed: int = 0) -> list[Any]:
    from streamfn.core import Done, Start, StopReason, TextDelta, TextEnd, TextStart, Usage

    rng = random.Random(seed)
    events: list[Any] = [Start(model="bench"), TextStart(0)]
    for _ in range(n):
        events.append(TextDelta(0, " " + " ".join(rng.choices(WORDS, k=rng.randint(1, 4)))))
    events += [TextEnd(0), Done(stop_reason=StopReason.STOP, usage=Usage(input=10, output=n))]
    return events


def _serve(kind: str, port: int, n_events: int, clients_events: int, shell: str) -> None:
    import hypercorn.asyncio
    import hypercorn.config

    from streamfn.asgi import ServerConfig
    from streamfn.core.dialects.openai_chat import OpenAIChatEncoder
    from streamfn.fuzz._events_backend import EventsBackend
    from streamfn.io_asyncio._server import App

    if shell == "trio":
        from streamfn.io_trio._server import App  # type: ignore[assignment]

    streams = {"bench": make_events(n_events), "small": make_events(clients_events, seed=1)}
    app: Any
    if kind == "ours":
        app = App(EventsBackend(streams), ServerConfig(max_concurrency=1000))
    else:
        encoded = {}
        for name, events in streams.items():
            enc = OpenAIChatEncoder(response_id="chatcmpl-ref", model=name, created=0)
            encoded[name] = [enc.encode(e) for e in events]

        async def app(scope: Any, receive: Any, send: Any) -> None:
            if scope["type"] != "http":
                if scope["type"] == "lifespan":
                    while True:
                        msg = await receive()
                        if msg["type"] == "lifespan.startup":
                            await send({"type": "lifespan.startup.complete"})
                        else:
                            await send({"type": "lifespan.shutdown.complete"})
                            return
                return
            body = b""
            while True:
                msg = await receive()
                body += msg.get("body", b"")
                if not msg.get("more_body"):
                    break
            name = "small" if b'"small"' in body else "bench"
            await send(
                {
                    "type": "http.response.start",
                    "status": 200,
                    "headers": [(b"content-type", b"text/event-stream")],
                }
            )
            if kind == "floor":  # the whole answer in one write: no streaming at all
                await send({"type": "http.response.body", "body": b"".join(encoded[name])})
                return
            for frame in encoded[name]:
                await send({"type": "http.response.body", "body": frame, "more_body": True})
            await send({"type": "http.response.body", "body": b""})

    config = hypercorn.config.Config()
    config.bind = [f"127.0.0.1:{port}"]
    config.accesslog = None
    config.backlog = 2048
    if shell == "trio":
        import hypercorn.trio
        import trio

        trio.run(hypercorn.trio.serve, app, config)
    else:
        asyncio.run(hypercorn.asyncio.serve(app, config))


def _body(model: str) -> bytes:
    return (
        b'{"model":"' + model.encode() + b'","stream":true,'
        b'"messages":[{"role":"user","content":"hi"}]}'
    )


class _Exchange:
    """One streamed request over h11, sans I/O, counting SSE events as they arrive.

    Both raw clients (blocking and asyncio) drive this, so they measure the
    same thing; the clock starts before the connection is made.
    """

    def __init__(self, model: str) -> None:
        from streamfn.core.wire import SSEDecoder

        self.start = time.perf_counter()
        self.ttfb = 0.0
        self.events = 0
        self._conn = h11.Connection(h11.CLIENT)
        self._decoder = SSEDecoder()
        self._body = _body(model)

    def request(self) -> bytes:
        headers = [
            ("host", "127.0.0.1"),  # the server answers only to loopback names
            ("content-type", "application/json"),
            ("content-length", str(len(self._body))),
        ]
        head = h11.Request(method="POST", target="/v1/chat/completions", headers=headers)
        conn = self._conn
        return (
            conn.send(head) + conn.send(h11.Data(data=self._body)) + conn.send(h11.EndOfMessage())
        )

    def feed(self, data: bytes) -> bool:
        """True once the response is complete."""
        self._conn.receive_data(data)
        while True:
            event = self._conn.next_event()
            if event is h11.NEED_DATA:
                return False
            if isinstance(event, h11.Data):
                if not self.ttfb:
                    self.ttfb = time.perf_counter() - self.start
                self.events += len(self._decoder.feed(bytes(event.data)))
            elif isinstance(event, (h11.EndOfMessage, h11.ConnectionClosed)):
                return True

    def result(self) -> tuple[int, float, float]:
        return self.events, self.ttfb, time.perf_counter() - self.start


def raw_client(port: int, model: str = "bench") -> tuple[int, float, float]:
    """(events, seconds to first body byte, total seconds) over h11 and a blocking socket."""
    exchange = _Exchange(model)
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(exchange.request())
        while not exchange.feed(sock.recv(65536)):
            pass
    return exchange.result()


def sdk_client(port: int) -> tuple[int, float, float]:
    import openai

    client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="x", max_retries=0)
    start = time.perf_counter()
    ttfb = 0.0
    events = 0
    with client:
        stream = client.chat.completions.create(
            model="bench", messages=[{"role": "user", "content": "hi"}], stream=True
        )
        for _ in stream:
            if not ttfb:
                ttfb = time.perf_counter() - start
            events += 1
    return events, ttfb, time.perf_counter() - start


async def _async_client(port: int) -> tuple[int, float, float]:
    exchange = _Exchange("small")
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(exchange.request())
        while not exchange.feed(await reader.read(65536)):
            pass
    finally:
        writer.close()
    return exchange.result()


async def _many(port: int, clients: int) -> tuple[float, list[float], int]:
    start = time.perf_counter()
    results = await asyncio.gather(*(_async_client(port) for _ in range(clients)))
    return time.perf_counter() - start, [r[1] for r in results], sum(r[0] for r in results)


def _wait_port(port: int, limit: float = 30.0) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"server on port {port} did not start")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--clients", type=int, default=100)
    parser.add_argument("--client-events", type=int, default=2_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--shell", choices=("asyncio", "trio"), default="asyncio", help="the servers' event loop"
    )
    args = parser.parse_args()

    ctx = mp.get_context("spawn")
    servers: dict[str, tuple[Any, int]] = {}
    for kind in ("ours", "reference", "floor"):
        with socket.socket() as probe:  # a free port; the tiny race is fine for a benchmark
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        proc = ctx.Process(
            target=_serve,
            args=(kind, port, args.events, args.client_events, args.shell),
            daemon=True,
        )
        proc.start()
        servers[kind] = (proc, port)
    for _, port in servers.values():
        _wait_port(port)

    rows: list[tuple[str, str, float, float, float]] = []
    for kind, (_, port) in servers.items():
        for client_name, client in (("raw h11", raw_client), ("openai SDK", sdk_client)):
            best: tuple[int, float, float] | None = None
            ttfbs = []
            for _ in range(args.repeat):
                result = client(port)
                ttfbs.append(result[1])
                if best is None or result[2] < best[2]:
                    best = result
            assert best is not None
            rows.append(
                (kind, client_name, best[0] / best[2], statistics.median(ttfbs) * 1000, best[2])
            )
    print(f"\n{args.events:,}-event OpenAI chat stream on {args.shell}, best of {args.repeat}")
    print(f"{'server':<10} {'client':<11} {'events/s':>11} {'TTFB ms':>9} {'total s':>8}")
    for kind, client_name, rate, ttfb, total in rows:
        print(f"{kind:<10} {client_name:<11} {rate:>11,.0f} {ttfb:>9.2f} {total:>8.3f}")
    by = {(k, c): r for k, c, r, _, _ in rows}
    for client_name in ("raw h11", "openai SDK"):
        for other in ("reference", "floor"):
            ratio = by[("ours", client_name)] / by[(other, client_name)]
            print(f"ours / {other} event rate with {client_name}: {ratio:.2f}")

    print(f"\n{args.clients} concurrent raw clients x {args.client_events:,} events")
    for kind, (_, port) in servers.items():
        total, ttfbs, events = asyncio.run(_many(port, args.clients))
        ttfbs.sort()
        print(
            f"{kind:<10} {events / total:>11,.0f} events/s  TTFB p50 {ttfbs[len(ttfbs) // 2] * 1000:.1f} ms"
            f"  p99 {ttfbs[int(len(ttfbs) * 0.99) - 1] * 1000:.1f} ms  wall {total:.2f} s"
        )
    for proc, _ in servers.values():
        proc.terminate()
        proc.join(5)


if __name__ == "__main__":
    main()
