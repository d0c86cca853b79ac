"""`streamfn serve`'s added time to first token under open-loop load: requests
arrive at a fixed rate whether or not earlier ones have finished.

Run::

    .venv/bin/python bench/bench_open_loop.py [--rounds 2] [--seconds 5]
        [--fractions 0.5,0.8,0.95] [--before SRC]

A closed-loop generator (`bench_gateway.py`'s) hides queueing: a slow server
slows its own clients down, so fewer requests wait. Here the arrivals are a
schedule: request ``i`` is due at ``i / rate`` seconds, and its time to first
token counts from that moment, not from when it was sent, so a generator or a
server that falls behind is charged for it. The generator keeps a pool of
keep-alive connections and opens another whenever every one is busy, so it
never holds an arrival back for a free connection.

The same pieces as `bench_gateway.py` (its fake upstream, its gateway
configuration, its HTTP reader), each in its own process on loopback:

1. **capacity**: closed-loop requests/s of one `streamfn serve` at
   ``--clients`` clients (the median of ``--rounds``: the best round is a share
   of the machine the gateway had once, not a rate it sustains), or
   ``--capacity RPS``;
2. for each fraction of that capacity, the rate is fixed and every target takes
   it for ``--seconds``, interleaved round-robin ``--rounds`` times: ``direct``
   (the upstream alone), ``streamfn`` (and ``streamfn before``, ``--before SRC``,
   and ``streamfn compiled``, ``--compiled DIR``, as in `bench_gateway.py`).

Reported per fraction: the rate, first-token p50 and p99 of each target, and
the gateway's *added* p50 and p99 (its figure minus ``direct``'s in the same
round; the median over rounds), the gateway's CPU per request and how busy
that keeps it (rate × CPU per request, in cores: near 1 a single process is
saturated whatever the fraction says, and its queue, not its code, sets the
tail), the share of the phase it spent runnable but waiting for a CPU (the
most of the rounds; Linux's schedstat: a busy machine's part of the tail), and how late
the generator issued its arrivals (p99): a late generator is part of every
target's figure and cancels out of the added one only in part (a burst of late
arrivals meets the gateway at once), so where the generator's own p99 lateness
is a fair share of an added p99 (``LATE_SHARE``) the report says so below the
table: that row's tail is the machine's, not the gateway's alone.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import os
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_gateway import (
    N_DELTAS,
    _free_port,
    _serve_upstream,
    _tree_cpu,
    _use_uvloop,
    _wait_ready,
    chat_payload,
    exchange,
    load,
    request_bytes,
    start_streamfn,
    stop,
)

Connection = tuple[asyncio.StreamReader, asyncio.StreamWriter, bytes]

#: a generator whose p99 lateness is at least this share of a gateway's added p99
#: (and over 2 ms) is named as part of that figure
LATE_SHARE = 0.5


def _queued(pid: int) -> float:
    """Seconds the threads of ``pid`` have spent runnable but waiting for a CPU
    (Linux's ``/proc/PID/task/*/schedstat``, its second field): the machine's share
    of a latency, which no change to the gateway's code moves; 0 where not reported."""
    total = 0
    for stat in Path(f"/proc/{pid}/task").glob("*/schedstat"):
        try:
            total += int(stat.read_text().split()[1])
        except (OSError, IndexError, ValueError):
            continue
    return total / 1e9


def open_loop(
    port: int, model: str, rate: float, seconds: float, token: str = "bench"
) -> dict[str, Any]:
    """``rate`` requests/s for ``seconds``, each on an idle pooled connection or a
    new one: first-token seconds (from each arrival's due time), deltas, lateness."""
    _use_uvloop()
    request = request_bytes(port, chat_payload(model), token)
    firsts: list[float] = []
    deltas: list[int] = []
    late: list[float] = []
    idle: list[Connection] = []
    opened = [0]

    async def one(due: float) -> None:
        if idle:
            reader, writer, pending = idle.pop()
        else:
            opened[0] += 1
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            pending = b""
        first, count, _, pending = await exchange(reader, writer, request, pending, due, text=False)
        firsts.append(first)
        deltas.append(count)
        idle.append((reader, writer, pending))

    async def main() -> None:
        total = int(rate * seconds)
        tasks = []
        start = time.perf_counter() + 0.05
        for i in range(total):
            due = start + i / rate
            wait = due - time.perf_counter()
            if wait > 0:
                await asyncio.sleep(wait)
            late.append(max(0.0, time.perf_counter() - due))
            tasks.append(asyncio.ensure_future(one(due)))
        await asyncio.gather(*tasks)
        for _, writer, _ in idle:
            writer.close()

    asyncio.run(main())
    return {"firsts": firsts, "deltas": deltas, "late": late, "connections": opened[0]}


def _p(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100)[q - 1] if len(values) > 1 else values[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=5.0, help="length of each phase")
    parser.add_argument("--clients", type=int, default=50, help="closed-loop clients (capacity)")
    parser.add_argument("--fractions", default="0.5,0.8,0.95", help="of the capacity")
    parser.add_argument(
        "--capacity",
        type=float,
        metavar="RPS",
        help="take this capacity (req/s), do not measure it",
    )
    parser.add_argument("--before", type=Path, metavar="SRC", help="also this source tree")
    parser.add_argument(
        "--compiled", type=Path, metavar="DIR", help="also the compiled build unpacked in DIR"
    )
    args = parser.parse_args()
    fractions = [float(f) for f in args.fractions.split(",")]

    ctx = mp.get_context("spawn")
    upstream_port = _free_port()
    upstream = ctx.Process(target=_serve_upstream, args=(upstream_port,), daemon=True)
    upstream.start()
    _wait_ready(upstream_port, None)
    workdir = Path(tempfile.mkdtemp(prefix="bench-open-loop-"))
    procs: dict[str, subprocess.Popen[bytes]] = {}
    targets: dict[str, tuple[int, str, int]] = {
        "direct": (upstream_port, "gpt-4o-mini", upstream.pid or 0)
    }
    gateways = (
        {"streamfn": None}
        | ({"streamfn before": args.before.resolve()} if args.before else {})
        | ({"streamfn compiled": args.compiled.resolve()} if args.compiled else {})
    )
    try:
        for name, source in gateways.items():
            port = _free_port()
            home = workdir / name.replace(" ", "-")
            home.mkdir()
            procs[name] = start_streamfn(upstream_port, port, home, 1, source)
            _wait_ready(port, procs[name])
            targets[name] = (port, "bench", procs[name].pid)
        with ProcessPoolExecutor(1, mp_context=ctx) as pool:
            for port, model, _ in targets.values():  # warm up
                pool.submit(load, port, model, 2, 30.0, 3).result()
            closed: dict[str, list[float]] = {name: [] for name in gateways}
            order = list(gateways)
            for round_ in range(args.rounds if args.capacity is None else 0):
                shift = round_ % len(order)  # each round in another order
                for name in order[shift:] + order[:shift]:
                    port, model, _ = targets[name]
                    got = pool.submit(load, port, model, args.clients, args.seconds, 10**9).result()
                    closed[name].append(len(got["ttft"]) / got["wall"])
            # the median: one lucky round's share of the machine is not a rate it sustains
            capacity = {name: statistics.median(rps or [0.0]) for name, rps in closed.items()}
            if args.capacity is not None:
                capacity["streamfn"] = args.capacity
            rows = []
            names = list(targets)
            for fraction in fractions:
                rate = fraction * capacity["streamfn"]
                runs: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
                for round_ in range(args.rounds):
                    shift = round_ % len(names)
                    for name in names[shift:] + names[:shift]:
                        port, model, pid = targets[name]
                        before, waited = _tree_cpu(pid), _queued(pid)
                        got = pool.submit(open_loop, port, model, rate, args.seconds).result()
                        got["cpu"] = _tree_cpu(pid) - before
                        got["queued"] = (_queued(pid) - waited) / args.seconds
                        if set(got["deltas"]) != {N_DELTAS}:
                            raise SystemExit(f"{name}: a response lost deltas")
                        runs[name].append(got)
                rows.append((fraction, rate, runs))
                print(".", end="", flush=True)
    finally:
        stop(procs.values(), upstream, workdir)
    print()
    report(rows, capacity, args)


def report(
    rows: list[tuple[float, float, dict[str, list[dict[str, Any]]]]],
    capacity: dict[str, float],
    args: argparse.Namespace,
) -> None:
    print(
        f"{N_DELTAS}-delta streams, open loop, {args.seconds:g} s per phase, "
        f"{args.rounds} interleaved rounds; "
        + (
            f"capacity given: {args.capacity:,.0f} req/s"
            if args.capacity is not None
            else f"capacity (closed loop, c={args.clients}, median): "
            + ", ".join(f"{name} {rps:,.0f} req/s" for name, rps in capacity.items())
        )
        + f"; load average {os.getloadavg()[0]:.1f}; python {sys.version.split()[0]}"
    )
    print()
    print(
        "| load | rate | target | TTFT p50 | TTFT p99 | added p50 | added p99 | "
        "CPU per request | busy | waiting for a CPU | connections | generator late p99 |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    notes: list[str] = []
    for fraction, rate, runs in rows:
        direct = runs["direct"]
        for name, got in runs.items():
            p50 = statistics.median(_p(r["firsts"], 50) for r in got) * 1e3
            p99 = statistics.median(_p(r["firsts"], 99) for r in got) * 1e3
            pairs = list(zip(got, direct, strict=True))
            add50 = statistics.median(_p(r["firsts"], 50) - _p(d["firsts"], 50) for r, d in pairs)
            add99 = statistics.median(_p(r["firsts"], 99) - _p(d["firsts"], 99) for r, d in pairs)
            cpu = min(r["cpu"] / len(r["firsts"]) for r in got) * 1e3
            added = (
                ("—", "—")
                if name == "direct"
                else (f"+{add50 * 1e3:.2f} ms", f"+{add99 * 1e3:.1f} ms")
            )
            late = statistics.median(_p(r["late"], 99) for r in got) * 1e3
            print(
                f"| {fraction:.0%} | {rate:,.0f}/s | {name} | {p50:.2f} ms | {p99:.1f} ms | "
                f"{added[0]} | {added[1]} | {cpu:.2f} ms | {rate * cpu / 1e3:.2f} | "
                f"{max(r['queued'] for r in got):.0%} | "
                f"{max(r['connections'] for r in got)} | {late:.2f} ms |"
            )
            if name != "direct" and late > max(2.0, LATE_SHARE * add99 * 1e3):
                notes.append(
                    f"{fraction:.0%}, {name}: the generator itself ran {late:.1f} ms late "
                    f"(p99) against an added p99 of {add99 * 1e3:.1f} ms: the machine "
                    "could not keep the schedule, so that tail is not the gateway's alone"
                )
    for note in notes:
        print(f"\nnote: {note}")


if __name__ == "__main__":
    main()
