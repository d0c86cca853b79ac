"""What the HTTP server under the gateway costs: the same `App` on several hostings.

Run::

    .venv/bin/python bench/bench_hosting.py [--rounds 3] [--seconds 4] [--clients 50]
        [--hostings hypercorn,hypercorn-uvloop,uvicorn,granian]

Each hosting serves the same application, built as ``streamfn serve --no-local
--config gateway.toml`` builds it (one served model on the fake upstream of
`bench_gateway.py`), in its own process:

- ``hypercorn``: `streamfn serve` as it ships (hypercorn on asyncio's loop; h11);
- ``hypercorn-uvloop``: the same with uvloop installed as the event loop;
- ``uvicorn``: uvicorn with httptools and uvloop;
- ``granian``: granian's embedded ASGI server (Rust HTTP, asyncio tasks).

Two answers: one of 200 content deltas and one of a single delta. The load
generator of `bench_gateway.py` (``--clients`` keep-alive connections, requests
back to back) takes each answer from each hosting for ``--seconds``, interleaved
round-robin, each round in another order. Reported, best round of each: the
server's CPU per request (the one-delta answer: the fixed cost) and per delta
(the 200-delta answer's CPU per request less the fixed cost, over 199), both
from /proc (the whole process tree), and the requests/s of each load. Every
answer's text is checked against the upstream's.

Only ``hypercorn`` is `streamfn serve` as it ships; the others are measured
here only (uvloop's accept loop bypasses the asyncio shell's connection cap;
uvicorn and granian lack the rest of its hardening too: head and send
deadlines, early-close handling, HTTP/2 limits).
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import os
import socket
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import bench_gateway as gw
from bench.streams import openai_chat_stream

HOSTINGS = ("hypercorn", "hypercorn-uvloop", "uvicorn", "granian")

#: two served models on the one upstream: 200 deltas ("bench") and one ("one")
GATEWAY_TOML = (
    gw.GATEWAY_TOML
    + """
[[models]]
name = "one"
upstream = "openai:gpt-4o"
base_url = "http://127.0.0.1:{port}/v1"
api_key_env = "BENCH_UPSTREAM_KEY"
"""
)


def _app(config: Path) -> tuple[Any, Any]:
    """The application `streamfn serve --no-local --config` builds, and its arguments."""
    from streamfn.cli import _serve as serve

    parser = argparse.ArgumentParser()
    serve.configure(parser)
    args = parser.parse_args(["--no-local", "--config", str(config)])
    base_urls = serve._check(args)
    return serve._app(args, serve._backend(args, base_urls)), args


def host(kind: str, port: int, config: Path) -> None:
    """Serve the gateway's application on ``port`` with ``kind`` until killed."""
    app, args = _app(config)
    if kind == "granian":
        from granian.constants import Interfaces
        from granian.server.embed import Server

        from streamfn.io_asyncio._server import AsyncioRuntime

        async def granian() -> None:
            app.bind(AsyncioRuntime())
            server = Server(app, port=port, interface=Interfaces.ASGI, log_enabled=False)
            await server.serve()

        asyncio.run(granian())
        return
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(1024)
    if kind == "uvicorn":
        import uvicorn

        from streamfn.io_asyncio._server import AsyncioRuntime

        app.bind(AsyncioRuntime())
        config_ = uvicorn.Config(
            app, loop="uvloop", http="httptools", lifespan="on", access_log=False,
            log_level="warning", ws="none",
        )  # fmt: skip
        uvicorn.Server(config_).run(sockets=[sock])
        return
    from streamfn.cli._serve import _serve_asyncio

    if kind == "hypercorn-uvloop":
        import uvloop

        uvloop.install()
    _serve_asyncio(args, app, sock)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--hostings", default=",".join(HOSTINGS))
    args = parser.parse_args()
    kinds = args.hostings.split(",")
    ctx = mp.get_context("spawn")
    upstream_port = gw._free_port()
    bodies = {
        b'"gpt-4o"': openai_chat_stream(1, seed=7),
        b"": openai_chat_stream(gw.N_DELTAS, seed=7),
    }
    expected = {"one": gw._text(bodies[b'"gpt-4o"']), "bench": gw._text(bodies[b""])}
    upstream = ctx.Process(target=gw._serve_upstream, args=(upstream_port, bodies), daemon=True)
    upstream.start()
    gw._wait_ready(upstream_port, None)
    workdir = Path(tempfile.mkdtemp(prefix="bench-hosting-"))
    config = workdir / "gateway.toml"
    config.write_text(GATEWAY_TOML.format(port=upstream_port))
    os.environ["BENCH_UPSTREAM_KEY"] = "bench-upstream-key"
    servers: dict[str, tuple[Any, int]] = {}
    rows: dict[tuple[str, str], list[tuple[float, float]]] = {}
    try:
        for kind in kinds:
            port = gw._free_port()
            proc = ctx.Process(target=host, args=(kind, port, config), daemon=True)
            proc.start()
            gw._wait_ready(port, None)
            servers[kind] = (proc, port)
        with ProcessPoolExecutor(1, mp_context=ctx) as pool:
            for kind, (_, port) in servers.items():  # warm up, check answers
                for model in expected:
                    got = pool.submit(gw.load, port, model, 2, 30.0, 3).result()
                    if set(got["texts"]) != {expected[model]}:
                        raise SystemExit(f"{kind} did not stream the upstream's answer")
            for round_ in range(args.rounds):
                shift = round_ % len(kinds)
                for kind in kinds[shift:] + kinds[:shift]:
                    proc, port = servers[kind]
                    for model in expected:
                        before = gw._tree_cpu(proc.pid)
                        got = pool.submit(
                            gw.load, port, model, args.clients, args.seconds, 10**9
                        ).result()
                        cpu = gw._tree_cpu(proc.pid) - before
                        if set(got["texts"]) != {expected[model]}:
                            raise SystemExit(f"{kind}: an answer's text differs")
                        requests = len(got["ttft"])
                        rows.setdefault((kind, model), []).append(
                            (cpu / requests, requests / got["wall"])
                        )
                print(".", end="", flush=True)
    finally:
        for proc, _ in servers.values():
            proc.kill()
            proc.join()
        upstream.terminate()
        upstream.join()
    print()
    report(rows, kinds, args)


def report(
    rows: dict[tuple[str, str], list[tuple[float, float]]], kinds: list[str], args: Any
) -> None:
    print(
        f"c={args.clients} for {args.seconds:g} s per answer and hosting, best of "
        f"{args.rounds} interleaved rounds; load average {os.getloadavg()[0]:.1f}"
    )
    print()
    print(
        "| hosting | CPU per request (1 delta) | CPU per delta | req/s 1 delta | "
        "req/s 200 deltas | per request / hypercorn | per delta / hypercorn |"
    )
    print("|---|---|---|---|---|---|---|")
    base = None
    for kind in kinds:
        one = min(r[0] for r in rows[kind, "one"])
        whole = min(r[0] for r in rows[kind, "bench"])
        delta = (whole - one) / (gw.N_DELTAS - 1)
        if base is None:
            base = (one, delta)
        print(
            f"| {kind} | {one * 1e3:.3f} ms | {delta * 1e6:.2f} us | "
            f"{max(r[1] for r in rows[kind, 'one']):,.0f} | "
            f"{max(r[1] for r in rows[kind, 'bench']):,.0f} | "
            f"{one / base[0]:.2f} | {delta / base[1]:.2f} |"
        )


if __name__ == "__main__":
    main()
