"""`streamfn serve` as an OpenAI-compatible gateway, against LiteLLM's proxy and the limit.

Run::

    .venv/bin/python bench/bench_gateway.py [--rounds 3] [--seconds 5] [--litellm PATH]
        [--workers 2] [--before SRC]

Every piece runs in its own process on loopback: a fake OpenAI upstream that
streams a 200-delta chat completion per request (pre-encoded, written at once,
keep-alive), the two gateways pointed at it, and a load generator (asyncio +
h11, one keep-alive connection per client). Three targets take the same load,
interleaved round-robin, ``--rounds`` times each:

- ``direct``: the load generator talks to the fake upstream itself: the limit
  (no gateway at all);
- ``streamfn``: ``streamfn serve --no-local --config gateway.toml``, the way a
  gateway is run: one served model (``bench``) on the fake upstream, its key
  in an environment variable;
- with ``--keys``, ``streamfn keys``: the same with client keys (``--store``, a
  SQLite file): every request looked up, admitted against a key with a budget
  (so its stream is metered against its reservation) and recorded;
- with ``--keys-postgres``, ``streamfn keys pg``: the same with the keys on a
  PostgreSQL server started for the run (Debian's binaries, as the tests start
  one: a private socket, ``fsync=off``); the server's CPU is charged to it too;
- with ``--workers N``, ``streamfn xN``: the same with ``--workers N``
  (scale-out on this machine: throughput and p99 against one process);
- with ``--before SRC``, ``streamfn before``: the same server run from
  another source tree (``SRC/streamfn`` importable as ``streamfn``, e.g. an
  extracted ``git archive`` of the base commit), so a change is measured
  against its base in one interleaved run on the same load (with ``--keys``,
  ``streamfn keys before`` too);
- with ``--compiled DIR``, ``streamfn compiled``: the same server from the
  mypyc-compiled build unpacked in DIR (``STREAMFN_COMPILE=1 pip wheel``, the
  wheel extracted there, as ``.ci/run`` does), the pure one beside it;
- ``litellm``: ``litellm --config`` with one ``openai/`` model on the upstream
  (LiteLLM's proxy, pinned: ``litellm[proxy]==1.106.2``, in a venv of its own
  because its pins conflict with the project's; ``--litellm`` names its
  ``litellm`` script).

Reported per target, best round of each: requests/s at 50 concurrent clients;
the gateway's CPU-seconds per 1,000 streamed deltas at c=50 (its whole
process tree, from /proc), and per request; time to first token (first non-empty content
delta) p50 at c=1 and p99 at c=50, and what the gateway adds to the direct
figure of the same round. Every response is checked: 200 deltas whose text
equals the upstream's.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor
from contextlib import ExitStack
from pathlib import Path
from typing import Any

N_DELTAS = 200
#: LiteLLM's proxy refuses to start without a strong master key
LITELLM_KEY = "sk-" + os.urandom(24).hex()
_CONTENT = re.compile(rb'"content":"[^"]')


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _use_uvloop() -> None:
    try:
        import uvloop  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        return
    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())


# -- the fake upstream ------------------------------------------------------------------


def upstream_body() -> tuple[bytes, str]:
    """The streamed body (one SSE event per HTTP chunk) and its answer text."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from bench.streams import openai_chat_stream

    body = openai_chat_stream(N_DELTAS, seed=7)
    text = []
    for line in body.split(b"\n"):
        if line.startswith(b"data: {"):
            for choice in json.loads(line[6:])["choices"]:
                text.append(choice["delta"].get("content") or "")
    return body, "".join(text)


def _serve_upstream(port: int, bodies: dict[bytes, bytes] | None = None, pace: float = 0.0) -> None:
    """A fake OpenAI server: every request gets its body at once, in chunked framing.

    ``bodies`` maps a byte string of the request (a model name) to the body it
    gets; the default is the 200-delta stream for every request. ``pace``: seconds
    between two SSE events (0: all at once), a live model's token rate.
    """
    _use_uvloop()
    if bodies is None:
        bodies = {b"": upstream_body()[0]}
    head = (
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
    )
    answers: dict[bytes, list[bytes]] = {}
    for key, body in bodies.items():
        events = [e + b"\n\n" for e in body.split(b"\n\n") if e]
        framed = [b"%x\r\n%s\r\n" % (len(e), e) for e in events]
        answers[key] = [head + framed[0], *framed[1:-1], framed[-1] + b"0\r\n\r\n"]

    def answer(request: bytes) -> list[bytes]:
        for key, response in answers.items():
            if key in request:
                return response
        raise KeyError("no body for this request")

    writing: set[asyncio.Future[None]] = set()

    async def paced(transport: Any, pieces: list[bytes]) -> None:
        for i, piece in enumerate(pieces):
            if i:
                await asyncio.sleep(pace)
            if transport.is_closing():
                return
            transport.write(piece)

    class Upstream(asyncio.Protocol):
        def connection_made(self, transport: Any) -> None:
            self.transport = transport
            self.buffer = b""

        def data_received(self, data: bytes) -> None:
            self.buffer += data
            while True:
                end = self.buffer.find(b"\r\n\r\n")
                if end < 0:
                    return
                match = re.search(rb"(?i)content-length:\s*(\d+)", self.buffer[:end])
                size = int(match.group(1)) if match else 0
                if len(self.buffer) < end + 4 + size:
                    return
                request, self.buffer = self.buffer[: end + 4 + size], self.buffer[end + 4 + size :]
                if pace:
                    task = asyncio.ensure_future(paced(self.transport, answer(request)))
                    writing.add(task)
                    task.add_done_callback(writing.discard)
                else:
                    self.transport.write(b"".join(answer(request)))

    async def main() -> None:
        loop = asyncio.get_running_loop()
        server = await loop.create_server(Upstream, "127.0.0.1", port, backlog=1024)
        async with server:
            await server.serve_forever()

    asyncio.run(main())


# -- the load generator (its own process) -------------------------------------------------


async def _one_client(
    port: int,
    payload: bytes,
    token: str,
    deadline: float,
    count: int,
    out: list[tuple[float, int, str]],
) -> None:
    """One keep-alive connection, requests back to back."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    request = request_bytes(port, payload, token)
    done = 0
    pending = b""
    try:
        while done < count and time.perf_counter() < deadline:
            t0 = time.perf_counter()
            first, deltas, text, pending = await exchange(
                reader, writer, request, pending, t0, text=not done
            )
            out.append((first, deltas, text))
            done += 1
    finally:
        writer.close()


def request_bytes(port: int, payload: bytes, token: str) -> bytes:
    """A streamed chat completion request of ``payload`` (keep-alive)."""
    return (
        b"POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1:%d\r\n"
        b"content-type: application/json\r\nauthorization: Bearer %s\r\n"
        b"content-length: %d\r\n\r\n%s" % (port, token.encode(), len(payload), payload)
    )


async def exchange(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    request: bytes,
    pending: bytes,
    t0: float,
    gaps: list[float] | None = None,
    text: bool = True,
) -> tuple[float, int, str, bytes]:
    """One request on a keep-alive connection, read with a small HTTP/1.1 reader
    (content-length or chunked) so the load generator costs little per delta:
    (seconds from ``t0`` to the first content delta, deltas, answer text, bytes of
    the next response; the text only with ``text``). ``gaps``: the seconds between reads after the first
    content delta go there (a paced stream's inter-token delays)."""
    writer.write(request)
    buffer = pending
    while (end := buffer.find(b"\r\n\r\n")) < 0:
        buffer += await _read(reader)
    head, body = buffer[:end].decode("latin-1"), buffer[end + 4 :]
    status = int(head.split(" ", 2)[1])
    length = re.search(r"(?i)\ncontent-length:\s*(\d+)", head)
    chunked = re.search(r"(?i)\ntransfer-encoding:\s*chunked", head) is not None
    first = 0.0
    pieces = [body]
    seen = len(body)
    last = 0.0
    if _CONTENT.search(body):
        last = time.perf_counter()
        first = last - t0
    while True:
        if chunked:
            tail = b"".join(pieces[-2:])[-7:]
            if tail.endswith(b"0\r\n\r\n") and _chunked_done(pieces):
                break
        elif length is not None:
            if seen >= int(length.group(1)):
                break
        else:
            raise RuntimeError(f"a response without length or chunking: {head!r}")
        data = await _read(reader)
        if first and gaps is not None:
            now = time.perf_counter()
            gaps.append(now - last)
            last = now
        elif not first and _CONTENT.search(pieces[-1][-32:] + data):
            last = time.perf_counter()
            first = last - t0
        pieces.append(data)
        seen += len(data)
    raw = b"".join(pieces)
    if chunked:
        body, pending = _dechunk(raw)
    else:
        size = int(length.group(1)) if length else len(raw)
        body, pending = raw[:size], raw[size:]
    if status != 200:
        raise RuntimeError(f"HTTP {status}: {body[:300]!r}")
    return first, len(_CONTENT.findall(body)), _text(body) if text else "", pending


async def _read(reader: asyncio.StreamReader) -> bytes:
    data = await reader.read(1 << 16)
    if not data:
        raise RuntimeError("the server closed the connection mid-response")
    return data


def _dechunk(raw: bytes) -> tuple[bytes, bytes]:
    """A chunked body and the bytes after it; raises ValueError while incomplete."""
    out = []
    pos = 0
    while True:
        eol = raw.index(b"\r\n", pos)
        size = int(raw[pos:eol].split(b";")[0], 16)
        start = eol + 2
        if size == 0:
            end = (
                raw.index(b"\r\n\r\n", eol) + 4 if raw[start : start + 2] != b"\r\n" else start + 2
            )
            return b"".join(out), raw[end:]
        if len(raw) < start + size + 2:
            raise ValueError("incomplete")
        out.append(raw[start : start + size])
        pos = start + size + 2


def _chunked_done(pieces: list[bytes]) -> bool:
    try:
        _dechunk(b"".join(pieces))
    except ValueError:
        return False
    return True


def _text(body: bytes) -> str:
    parts = []
    for line in body.split(b"\n"):
        if line.startswith(b"data: {"):
            for choice in json.loads(line[6:]).get("choices") or ():
                parts.append((choice.get("delta") or {}).get("content") or "")
    return "".join(parts)


def chat_payload(model: str) -> bytes:
    """The body every request sends: a one-line chat, streamed."""
    return json.dumps(
        {"model": model, "stream": True, "messages": [{"role": "user", "content": "Hi"}]}
    ).encode()


def load(
    port: int, model: str, clients: int, seconds: float, count: int, token: str = "bench"
) -> dict[str, Any]:
    """``clients`` keep-alive clients for ``seconds`` (or ``count`` requests each)."""
    _use_uvloop()
    payload = chat_payload(model)
    results: list[tuple[float, int, str]] = []

    async def main() -> float:
        t0 = time.perf_counter()
        deadline = t0 + seconds
        await asyncio.gather(
            *(_one_client(port, payload, token, deadline, count, results) for _ in range(clients))
        )
        return time.perf_counter() - t0

    wall = asyncio.run(main())
    return {
        "wall": wall,
        "ttft": [r[0] for r in results],
        "deltas": [r[1] for r in results],
        "texts": [r[2] for r in results if r[2]],
    }


# -- gateways ------------------------------------------------------------------------------


def _tree_cpu(*pids: int) -> float:
    """CPU seconds (user + system) of ``pids`` and every live descendant."""
    tick = os.sysconf("SC_CLK_TCK")
    children: dict[int, list[int]] = {}
    stats: dict[int, float] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry))
        stats[int(entry)] = (int(fields[11]) + int(fields[12])) / tick
    total, todo = 0.0, list(pids)
    while todo:
        p = todo.pop()
        total += stats.get(p, 0.0)
        todo += children.get(p, [])
    return total


def _wait_ready(port: int, proc: subprocess.Popen[bytes] | None, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise SystemExit(f"a gateway exited with {proc.returncode} before it was ready")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    raise SystemExit(f"nothing listens on {port} after {seconds} s")


#: the gateway's configuration, as an operator writes it (see ``streamfn serve --config``)
GATEWAY_TOML = """\
registry = false

[[models]]
name = "bench"
upstream = "openai:gpt-4o-mini"
base_url = "http://127.0.0.1:{port}/v1"
api_key_env = "BENCH_UPSTREAM_KEY"
"""


def start_streamfn(
    upstream: int,
    port: int,
    workdir: Path,
    workers: int = 1,
    source: Path | None = None,
    store: str | None = None,
    flags: tuple[str, ...] = (),
) -> subprocess.Popen[bytes]:
    """``streamfn serve --no-local --config`` on ``port``; ``source``: a directory
    whose ``streamfn`` package is run instead of the installed one; ``store``: client
    keys kept there; ``flags``: more of ``serve``'s flags."""
    config = workdir / "gateway.toml"
    config.write_text(GATEWAY_TOML.format(port=upstream))
    env = dict(os.environ, BENCH_UPSTREAM_KEY="bench-upstream-key")
    if source is None:
        args = [str(Path(sys.executable).with_name("streamfn"))]
    else:
        env["PYTHONPATH"] = str(source)
        args = [sys.executable, "-c", "import sys, streamfn.cli as c; sys.exit(c.main())"]
    args += ["serve", "--no-local", "--port", str(port), "--config", str(config)]
    args += ["--workers", str(workers), *flags]
    args += ["--store", store] if store is not None else []
    return subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _postgres(later: ExitStack) -> tuple[str, tuple[int, ...]]:
    """A PostgreSQL server for the run (stopped by ``later``): a fresh database's URL,
    and the server's pid (its process tree is charged with the gateway's)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from postgres_server import postgres_server

    server = later.enter_context(postgres_server())
    url = server.fresh_database()
    pid = int((server.socket_dir / "data" / "postmaster.pid").read_text().split()[0])
    return url, (pid,)


def start_litellm(exe: str, upstream: int, port: int, workdir: Path) -> subprocess.Popen[bytes]:
    config = workdir / "litellm.yaml"
    config.write_text(
        "model_list:\n"
        "  - model_name: bench\n"
        "    litellm_params:\n"
        "      model: openai/gpt-4o-mini\n"
        f"      api_base: http://127.0.0.1:{upstream}/v1\n"
        "      api_key: bench-upstream-key\n"
        "litellm_settings:\n"
        "  telemetry: false\n"
    )
    env = dict(
        os.environ,
        LITELLM_MASTER_KEY=LITELLM_KEY,
        LITELLM_LOCAL_MODEL_COST_MAP="True",
        LITELLM_LOG="ERROR",
        LITELLM_TELEMETRY="False",
    )
    args = [exe, "--config", str(config), "--host", "127.0.0.1", "--port", str(port)]
    return subprocess.Popen(
        args, env=env, cwd=workdir, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )


def _client_key(
    home: Path, url: str | None = None, source: Path | None = None
) -> tuple[str, str]:
    """A store (``url``, else a SQLite file in ``home``) holding one client key with a
    budget no run spends: its URL and the key's secret. ``source``: made by the
    streamfn there (a store's schema is its streamfn's)."""
    url = url or f"sqlite://{home / 'keys.db'}"
    if source is not None:
        made = subprocess.run(
            [sys.executable, "-c", "import sys, time; from streamfn.ledger import open_store; "
             "s = open_store(sys.argv[1]); print(s.create_key('bench', now=time.time(), "
             "budget=1e6)[1]); s.close()", url],
            env=dict(os.environ, PYTHONPATH=str(source)), check=True, capture_output=True,
            text=True,
        )  # fmt: skip
        return url, made.stdout.strip()
    from streamfn.ledger import open_store

    store = open_store(url)
    try:
        _, secret = store.create_key("bench", now=time.time(), budget=1e6)
    finally:
        store.close()
    return url, secret


def stop(gateways: Iterable[subprocess.Popen[bytes]], upstream: Any, workdir: Path) -> None:
    """Stop the gateways (SIGINT, then kill after 15 s), the upstream, and remove ``workdir``."""
    for proc in gateways:
        proc.send_signal(signal.SIGINT)
    for proc in gateways:
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    upstream.terminate()
    upstream.join()
    shutil.rmtree(workdir, ignore_errors=True)


# -- driver ---------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=5.0, help="length of each c=50 phase")
    parser.add_argument("--c1-requests", type=int, default=40)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--litellm", default=shutil.which("litellm") or "", help="litellm script")
    parser.add_argument(
        "--workers", type=int, default=1, help="also run streamfn with this many workers"
    )
    parser.add_argument(
        "--before",
        type=Path,
        metavar="SRC",
        help="also run the streamfn in SRC/streamfn (a base commit)",
    )
    parser.add_argument(
        "--compiled",
        type=Path,
        metavar="DIR",
        help="also run the compiled build unpacked in DIR (DIR/streamfn)",
    )
    parser.add_argument(
        "--pace",
        type=float,
        default=0.0,
        help="seconds between the upstream's events (0.02: 50 tokens/s, one event per read)",
    )
    parser.add_argument(
        "--no-litellm", action="store_true", help="leave LiteLLM out (streamfn only)"
    )
    parser.add_argument(
        "--keys", action="store_true", help="also run streamfn with client keys and usage records"
    )
    parser.add_argument(
        "--keys-postgres",
        action="store_true",
        help="also run streamfn with client keys on a PostgreSQL server started for the run",
    )
    args = parser.parse_args()
    if args.no_litellm:
        args.litellm = ""

    ctx = mp.get_context("spawn")
    upstream_port = _free_port()
    upstream = ctx.Process(
        target=_serve_upstream, args=(upstream_port, None, args.pace), daemon=True
    )
    upstream.start()
    _wait_ready(upstream_port, None)
    _, expected_text = upstream_body()

    workdir = Path(tempfile.mkdtemp(prefix="bench-gateway-"))
    procs: dict[str, subprocess.Popen[bytes]] = {}
    #: name: (port, model, pids of the process trees to charge, bearer token)
    targets: dict[str, tuple[int, str, tuple[int, ...], str]] = {
        "direct": (upstream_port, "gpt-4o-mini", (upstream.pid or 0,), "bench")
    }
    #: name: (store URL, pids its engine runs as, charged to it too)
    stores: dict[str, tuple[str | None, tuple[int, ...]]] = {}
    later = ExitStack()
    try:
        gateways: dict[str, tuple[int, Path | None]] = {"streamfn": (1, None)}
        if args.before is not None:
            gateways["streamfn before"] = (1, args.before.resolve())
        if args.compiled is not None:
            gateways["streamfn compiled"] = (1, args.compiled.resolve())
        if args.keys:
            gateways["streamfn keys"] = (1, None)
            stores["streamfn keys"] = (None, ())
            if args.before is not None:
                gateways["streamfn keys before"] = (1, args.before.resolve())
                stores["streamfn keys before"] = (None, ())
        if args.keys_postgres:
            gateways["streamfn keys pg"] = (1, None)
            stores["streamfn keys pg"] = _postgres(later)
        if args.workers > 1:
            gateways[f"streamfn x{args.workers}"] = (args.workers, None)
        for name, (workers, source) in gateways.items():
            port = _free_port()
            home = workdir / name.replace(" ", "-")
            home.mkdir()
            store, token = (None, "bench")
            if name in stores:
                store, token = _client_key(home, stores[name][0], source)
            procs[name] = start_streamfn(upstream_port, port, home, workers, source, store)
            _wait_ready(port, procs[name])
            charged = (procs[name].pid, *stores.get(name, (None, ()))[1])
            targets[name] = (port, "bench", charged, token)
        if args.litellm:
            port = _free_port()
            procs["litellm"] = start_litellm(args.litellm, upstream_port, port, workdir)
            _wait_ready(port, procs["litellm"])
            targets["litellm"] = (port, "bench", (procs["litellm"].pid,), LITELLM_KEY)
        else:
            print("litellm not found (--litellm PATH): measuring streamfn and direct only")
        with ProcessPoolExecutor(1, mp_context=ctx) as pool:
            for name, (port, model, _, token) in targets.items():  # warm up, check answers
                got = pool.submit(load, port, model, 2, 30.0, 3, token).result()
                if set(got["texts"]) != {expected_text} or set(got["deltas"]) != {N_DELTAS}:
                    raise SystemExit(f"{name} did not stream the upstream's answer")
            rows = run_rounds(pool, targets, args, expected_text)
    finally:
        try:
            stop(procs.values(), upstream, workdir)
        finally:
            later.close()
    report(rows, args)


def run_rounds(
    pool: ProcessPoolExecutor,
    targets: dict[str, tuple[int, str, tuple[int, ...], str]],
    args: argparse.Namespace,
    expected_text: str,
) -> dict[str, list[dict[str, float]]]:
    rows: dict[str, list[dict[str, float]]] = {name: [] for name in targets}
    names = list(targets)
    for round_ in range(args.rounds):
        # each round in another order: no target always runs right after the same one
        shift = round_ % len(names)
        for name in names[shift:] + names[:shift]:
            port, model, pids, token = targets[name]
            c1 = pool.submit(load, port, model, 1, 60.0, args.c1_requests, token).result()
            before = _tree_cpu(*pids)
            c50 = pool.submit(load, port, model, args.clients, args.seconds, 10**9, token).result()
            cpu = _tree_cpu(*pids) - before
            if set(c1["texts"] + c50["texts"]) != {expected_text}:
                raise SystemExit(f"{name}: a response's text differs from the upstream's")
            if set(c50["deltas"]) != {N_DELTAS}:
                raise SystemExit(f"{name}: a response lost deltas")
            deltas = sum(c50["deltas"])
            rows[name].append(
                {
                    "rps": len(c50["ttft"]) / c50["wall"],
                    "cpu_per_1k": cpu / deltas * 1000,
                    "p50_c1": statistics.median(c1["ttft"]) * 1e3,
                    "p99_c50": statistics.quantiles(c50["ttft"], n=100)[98] * 1e3
                    if len(c50["ttft"]) >= 2
                    else c50["ttft"][0] * 1e3,
                }
            )
        print(".", end="", flush=True)
    print()
    return rows


def report(rows: dict[str, list[dict[str, float]]], args: argparse.Namespace) -> None:
    load_avg = os.getloadavg()[0]
    print(
        f"{N_DELTAS}-delta streams"
        + (f" paced {args.pace * 1000:g} ms apart" if args.pace else "")
        + f", c={args.clients} for {args.seconds:.0f} s and {args.c1_requests} "
        f"sequential requests per round, best of {args.rounds} interleaved rounds; "
        f"load average {load_avg:.1f}; python {sys.version.split()[0]}"
    )
    print()
    print(
        f"| target | req/s c={args.clients} | CPU-s per 1k deltas | us CPU per delta | "
        "us CPU per request | "
        f"TTFT p50 c=1 (added) | TTFT p99 c={args.clients} (added) |"
    )
    print("|---|---|---|---|---|---|---|")
    direct = rows["direct"]
    for name, runs in rows.items():
        rps = max(r["rps"] for r in runs)
        cpu = min(r["cpu_per_1k"] for r in runs)
        added_p50 = min(r["p50_c1"] - d["p50_c1"] for r, d in zip(runs, direct, strict=True))
        added_p99 = min(r["p99_c50"] - d["p99_c50"] for r, d in zip(runs, direct, strict=True))
        p50 = min(r["p50_c1"] for r in runs)
        p99 = min(r["p99_c50"] for r in runs)
        extra = "" if name == "direct" else f" (+{added_p50:.2f})"
        extra99 = "" if name == "direct" else f" (+{added_p99:.1f})"
        print(
            f"| {name} | {rps:,.0f} | {cpu:.4f} | {cpu * 1000:.1f} | {cpu * N_DELTAS * 1000:,.0f} | "
            f"{p50:.2f} ms{extra} | {p99:.1f} ms{extra99} |"
        )
    best = {name: max(r["rps"] for r in runs) for name, runs in rows.items()}
    cpu = {name: min(r["cpu_per_1k"] for r in runs) for name, runs in rows.items()}
    p99 = {name: min(r["p99_c50"] for r in runs) for name, runs in rows.items()}
    print()
    for name in rows:
        if name.startswith("streamfn x"):  # scale-out: the workers against one process
            print(
                f"{name} / streamfn: {best[name] / best['streamfn']:.2f}x the requests/s, "
                f"p99 c={args.clients} {p99[name]:.1f} ms against {p99['streamfn']:.1f} ms"
            )
            continue
        if name in ("direct", "streamfn"):
            continue
        print(
            f"streamfn / {name}: {best['streamfn'] / best[name]:.2f}x the requests/s, "
            f"{cpu[name] / cpu['streamfn']:.2f}x less CPU per delta, "
            f"p99 c={args.clients} {p99['streamfn']:.1f} ms against {p99[name]:.1f} ms"
        )
    per_delta = cpu["streamfn"] / 1000  # CPU-seconds per delta
    reads = f"events {args.pace * 1000:g} ms apart" if args.pace else "whole answers per read"
    print(
        f"one core: {1 / per_delta:,.0f} deltas/s with {reads}, "
        f"{1 / (per_delta * 50):,.0f} streams of 50 tokens/s at that cost per delta"
    )


if __name__ == "__main__":
    main()
