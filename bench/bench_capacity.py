"""How many live streams one `streamfn serve` process holds, and what they weigh.

Run::

    .venv/bin/python bench/bench_capacity.py [--pace 0.02] [--max-gap 0.05]
        [--seconds 8] [--start 100] [--rss 1000,10000] [--rss-pace 10] [--workers 1]

The fake upstream of `bench_gateway.py` streams its 200-delta answer one event
per write, ``--pace`` seconds apart (0.02: 50 tokens/s, a live model), so each
upstream read is one delta, the gateway's dearest case.

1. **Streams per process**: ``N`` clients, each with requests back to back for
   ``--seconds`` (starts spread over the first second), record every gap between
   two reads of an answer after its first token. ``N`` passes when the gaps' p99
   is at most ``--max-gap`` (the pace itself is 20 ms of it). The search doubles
   ``N`` from ``--start`` until a step fails, then halves the interval between the
   last pass and the first fail down to 5%. At the same ``N`` the ``direct``
   target (the upstream alone) says whether the gateway or the rest of the
   machine (the upstream, the generator, other work) was the bound: a step where
   direct fails too is reported as the machine's limit, not the gateway's.
2. **Memory per stream** (``--rss``): for each count, that many streams held open
   at once at ``--rss-pace`` (slower: only the count matters here), measured once
   every one has its first token: the gateway's resident memory (its process
   tree, from /proc) against the same server idle, and per stream.

The file-descriptor limit is raised to its hard limit (two sockets per stream in
the gateway), and the gateway is started with connection and concurrency caps
above the counts. ``--workers``: the same with ``streamfn serve --workers N``.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import os
import resource
import statistics
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import bench_gateway as gw


def _raise_fd_limit() -> int:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def streams(port: int, model: str, clients: int, seconds: float) -> dict[str, Any]:
    """``clients`` connections streaming back to back: every inter-read gap, deltas."""
    gw._use_uvloop()
    request = gw.request_bytes(port, gw.chat_payload(model), "bench")
    gaps: list[float] = []
    deltas: list[int] = []

    async def client(delay: float, deadline: float) -> None:
        await asyncio.sleep(delay)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        pending = b""
        try:
            while time.perf_counter() < deadline:
                t0 = time.perf_counter()
                _, count, _, pending = await gw.exchange(
                    reader, writer, request, pending, t0, gaps, text=False
                )
                deltas.append(count)
        finally:
            writer.close()

    async def main() -> None:
        deadline = time.perf_counter() + seconds
        await asyncio.gather(*(client(i / clients, deadline) for i in range(clients)))

    asyncio.run(main())
    return {"gaps": gaps, "deltas": deltas}


def hold(port: int, count: int, ready: Any, release: Any, results: Any) -> None:
    """``count`` streams open at once (at most 64 connecting at a time); ``ready``
    is set when each has its first token; all close when ``release`` is set."""
    _raise_fd_limit()
    gw._use_uvloop()
    request = gw.request_bytes(port, gw.chat_payload("bench"), "bench")

    async def main() -> None:
        gate = asyncio.Semaphore(64)  # within the listen backlogs
        writers: list[asyncio.StreamWriter] = []
        failed: list[str] = []

        async def one() -> None:
            try:
                async with gate:  # connecting only: the first token may be a pace away
                    reader, writer = await asyncio.open_connection("127.0.0.1", port)
                writers.append(writer)
                writer.write(request)
                seen = b""
                while b'"content":"' not in seen:
                    data = await reader.read(1 << 16)
                    if not data:
                        raise RuntimeError(f"closed after {seen[:200]!r}")
                    seen += data
                    if len(seen) >= 12 and not seen.startswith(b"HTTP/1.1 200"):
                        raise RuntimeError(f"refused: {seen[:200]!r}")
            except Exception as exc:
                failed.append(repr(exc))

        await asyncio.gather(*(one() for _ in range(count)))
        ready.set()
        while not release.is_set():
            await asyncio.sleep(0.1)
        for writer in writers:
            writer.close()
        results.put((count - len(failed), failed[:3]))

    asyncio.run(main())


def _tree_rss(pid: int) -> int:
    """Resident bytes of ``pid`` and its descendants."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                ppid = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except OSError:
                continue
            children.setdefault(ppid, []).append(int(entry))
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
        except OSError:
            pass
        todo += children.get(p, [])
    return total


class Rig:
    """A paced upstream and a gateway on it, started and stopped together."""

    def __init__(self, pace: float, workers: int, flags: tuple[str, ...]) -> None:
        ctx = mp.get_context("spawn")
        self.upstream_port = gw._free_port()
        self.upstream = ctx.Process(
            target=gw._serve_upstream, args=(self.upstream_port, None, pace), daemon=True
        )
        self.upstream.start()
        gw._wait_ready(self.upstream_port, None)
        self.workdir = Path(tempfile.mkdtemp(prefix="bench-capacity-"))
        self.port = gw._free_port()
        self.gateway = gw.start_streamfn(
            self.upstream_port, self.port, self.workdir, workers, None, flags
        )
        gw._wait_ready(self.port, self.gateway)

    def close(self) -> None:
        gw.stop([self.gateway], self.upstream, self.workdir)


def _trial(
    pool: ProcessPoolExecutor, rig: Rig, n: int, args: argparse.Namespace
) -> dict[str, float]:
    row: dict[str, float] = {"n": n}
    for name, port, model, pid in (
        ("streamfn", rig.port, "bench", rig.gateway.pid),
        ("direct", rig.upstream_port, "gpt-4o-mini", rig.upstream.pid or 0),
    ):
        cpu = gw._tree_cpu(pid)
        got = pool.submit(streams, port, model, n, args.seconds).result()
        cpu = gw._tree_cpu(pid) - cpu
        if set(got["deltas"]) - {gw.N_DELTAS}:
            raise SystemExit(f"{name} at {n} streams: an answer lost deltas")
        row[f"{name}_p99"] = statistics.quantiles(got["gaps"], n=100)[98] * 1e3
        row[f"{name}_p50"] = statistics.median(got["gaps"]) * 1e3
        row[f"{name}_us"] = cpu / max(1, len(got["gaps"])) * 1e6
    row["load"] = os.getloadavg()[0]
    print(
        f"N={n}: gap p99 streamfn {row['streamfn_p99']:.1f} ms, direct {row['direct_p99']:.1f} ms; "
        f"{row['streamfn_us']:.0f} us CPU per delta; load {row['load']:.1f}",
        flush=True,
    )
    return row


def search(args: argparse.Namespace, flags: tuple[str, ...]) -> list[dict[str, float]]:
    rig = Rig(args.pace, args.workers, flags)
    rows: list[dict[str, float]] = []
    limit = args.max_gap * 1e3
    try:
        with ProcessPoolExecutor(1, mp_context=mp.get_context("spawn")) as pool:
            good, bad, n = 0, 0, args.start
            while True:
                row = _trial(pool, rig, n, args)
                rows.append(row)
                if row["streamfn_p99"] <= limit:
                    good = n
                else:
                    bad = n
                if not bad:
                    n *= 2
                elif bad - good <= max(1, good // 20) or (not good and n <= 10):
                    break
                else:
                    n = (good + bad) // 2 if good else n // 2
    finally:
        rig.close()
    return rows


def rss(args: argparse.Namespace, flags: tuple[str, ...]) -> list[tuple[int, int, int, int]]:
    """(streams, streams held, gateway RSS idle, RSS with them) per ``--rss`` count."""
    out = []
    ctx = mp.get_context("spawn")
    for count in (int(c) for c in args.rss.split(",") if c):
        rig = Rig(args.rss_pace, args.workers, flags)
        try:
            time.sleep(1.0)
            idle = _tree_rss(rig.gateway.pid)
            ready, release, results = ctx.Event(), ctx.Event(), ctx.Queue()
            holder = ctx.Process(target=hold, args=(rig.port, count, ready, release, results))
            holder.start()
            if not ready.wait(600):
                raise SystemExit(f"{count} streams did not all start in 10 minutes")
            time.sleep(1.0)
            busy = _tree_rss(rig.gateway.pid)
            release.set()
            held, failed = results.get(timeout=120)
            holder.join(60)
            if failed:
                print(f"{count - held} of {count} streams failed, e.g. {failed}")
            out.append((count, held, idle, busy))
            print(
                f"{held:,} streams: RSS {busy / 2**20:,.0f} MiB (idle {idle / 2**20:,.0f} MiB), "
                f"{(busy - idle) / max(1, held) / 1024:.1f} KiB per stream",
                flush=True,
            )
        finally:
            rig.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pace", type=float, default=0.02, help="seconds between events")
    parser.add_argument("--max-gap", type=float, default=0.05, help="p99 gap that passes (s)")
    parser.add_argument("--seconds", type=float, default=8.0, help="length of each trial")
    parser.add_argument("--start", type=int, default=100, help="first N of the search")
    parser.add_argument("--no-search", action="store_true", help="RSS figures only")
    parser.add_argument("--rss", default="1000,10000", help="stream counts to weigh ('' none)")
    parser.add_argument(
        "--rss-pace",
        type=float,
        default=10.0,
        help="pace while weighing (s): slow, so that opening the streams is not held up by "
        "their deltas (10,000 streams at 1 s apart are 10,000 deltas/s, over a core's worth)",
    )
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args()
    fds = _raise_fd_limit()
    top = max([args.start * 64, *(int(c) for c in args.rss.split(",") if c)])
    if fds < 2 * top + 100:
        print(f"file descriptors: {fds}, fewer than two per stream at {top} streams")
    caps = str(top + 100)
    flags = ("--max-connections", caps, "--max-concurrency", caps, "--max-queue", "0")
    started = os.getloadavg()[0]
    rows = [] if args.no_search else search(args, flags)
    weights = rss(args, flags)
    print()
    print(
        f"pace {args.pace * 1e3:g} ms ({1 / args.pace:g} tokens/s), {args.seconds:g} s per trial, "
        f"workers {args.workers}, pass: gap p99 <= {args.max_gap * 1e3:g} ms; "
        f"load average {started:.1f} -> {os.getloadavg()[0]:.1f}; python {sys.version.split()[0]}"
    )
    if rows:
        print()
        print("| streams | gap p50 / p99 streamfn | gap p50 / p99 direct | CPU per delta | pass |")
        print("|---|---|---|---|---|")
        for row in sorted(rows, key=lambda r: r["n"]):
            ok = row["streamfn_p99"] <= args.max_gap * 1e3
            bound = "" if ok or row["direct_p99"] <= args.max_gap * 1e3 else " (direct fails too)"
            print(
                f"| {int(row['n']):,} | {row['streamfn_p50']:.1f} / {row['streamfn_p99']:.1f} ms | "
                f"{row['direct_p50']:.1f} / {row['direct_p99']:.1f} ms | "
                f"{row['streamfn_us']:.0f} us | {'yes' if ok else 'no'}{bound} |"
            )
        passed = [r["n"] for r in rows if r["streamfn_p99"] <= args.max_gap * 1e3]
        print()
        print(f"held with gap p99 <= {args.max_gap * 1e3:g} ms: {int(max(passed, default=0)):,}")
    if weights:
        print()
        print(f"| streams held (pace {args.rss_pace:g} s) | gateway RSS | idle | per stream |")
        print("|---|---|---|---|")
        for count, held, idle, busy in weights:
            print(
                f"| {held:,} of {count:,} | {busy / 2**20:,.0f} MiB | {idle / 2**20:,.0f} MiB | "
                f"{(busy - idle) / max(1, held) / 1024:.1f} KiB |"
            )


if __name__ == "__main__":
    main()
