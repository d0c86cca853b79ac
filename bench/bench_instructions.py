"""Instructions `streamfn serve` executes per request and per delta, counted by
callgrind: a figure the machine's load does not move.

Run::

    .venv/bin/python bench/bench_instructions.py [--before SRC] [--pace 0.05]
        [--clients 10] [--requests 10] [--deltas 200]

The fake upstream and the load generator of `bench_gateway.py`; the gateway runs
under ``valgrind --tool=callgrind --instr-atstart=no``, takes three warm-up
requests, and is counted only between ``callgrind_control -i on`` and ``-i off``
around the load (``--clients`` connections, ``--requests`` each). ``--deltas``:
the upstream answer's content deltas (1 gives the fixed cost of a request);
``--pace``: seconds between its events (0.05 with a few clients: one event per
read, a live stream, slow enough that the gateway is never saturated under
valgrind, which would batch reads and count less). ``--before SRC`` counts the
server in SRC too (as in `bench_gateway.py`). Needs valgrind.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import bench_gateway as gw
from bench.streams import openai_chat_stream


def count(source: Path | None, args: argparse.Namespace) -> tuple[int, int, int]:
    """(instructions, requests, deltas) of one counted load."""
    ctx = mp.get_context("spawn")
    upstream_port = gw._free_port()
    bodies = {b"": openai_chat_stream(args.deltas, seed=7)}
    upstream = ctx.Process(
        target=gw._serve_upstream, args=(upstream_port, bodies, args.pace), daemon=True
    )
    upstream.start()
    gw._wait_ready(upstream_port, None)
    workdir = Path(tempfile.mkdtemp(prefix="bench-instructions-"))
    (workdir / "gateway.toml").write_text(gw.GATEWAY_TOML.format(port=upstream_port))
    out = workdir / "callgrind.out"
    env = dict(os.environ, BENCH_UPSTREAM_KEY="bench-upstream-key")
    if source is not None:
        env["PYTHONPATH"] = str(source)
    port = gw._free_port()
    valgrind = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}"]
    serve = ["serve", "--no-local", "--port", str(port), "--config", str(workdir / "gateway.toml")]
    gateway = subprocess.Popen(
        [
            *valgrind,
            sys.executable,
            "-c",
            "import sys, streamfn.cli as c; sys.exit(c.main())",
            *serve,
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        gw._wait_ready(port, gateway, 600)
        gw.load(port, "bench", 2, 300.0, 3)
        control = ["callgrind_control", "-i"]
        subprocess.run([*control, "on", str(gateway.pid)], check=True, capture_output=True)
        got = gw.load(port, "bench", args.clients, 3600.0, args.requests)
        subprocess.run([*control, "off", str(gateway.pid)], check=True, capture_output=True)
    finally:
        gateway.send_signal(signal.SIGINT)  # callgrind writes its counts as it exits:
        gateway.wait(300)  # slow under valgrind, so no kill after bench_gateway's 15 s
        upstream.terminate()
        upstream.join()
    total = 0
    for line in out.read_text().splitlines():
        if line.startswith("totals:"):
            total = int(line.split()[1])
    shutil.rmtree(workdir, ignore_errors=True)
    if not total:
        raise SystemExit("callgrind counted nothing: is callgrind_control working?")
    return total, len(got["ttft"]), sum(got["deltas"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before", type=Path, metavar="SRC", help="also this source tree")
    parser.add_argument("--pace", type=float, default=0.0)
    parser.add_argument("--clients", type=int, default=10)
    parser.add_argument("--requests", type=int, default=10, help="per client")
    parser.add_argument("--deltas", type=int, default=gw.N_DELTAS)
    args = parser.parse_args()
    sources = {"streamfn": None} | (
        {"streamfn before": args.before.resolve()} if args.before else {}
    )
    print(
        f"{args.deltas}-delta answers, pace {args.pace:g} s, {args.clients} clients x "
        f"{args.requests} requests; load average {os.getloadavg()[0]:.1f} (no bearing on counts)"
    )
    for name, source in sources.items():
        total, requests, deltas = count(source, args)
        print(
            f"{name}: {requests} requests, {deltas} deltas, {total / 1e6:,.1f} M instructions: "
            f"{total / requests / 1e6:.3f} M per request, {total / max(1, deltas):,.0f} per delta",
            flush=True,
        )


if __name__ == "__main__":
    main()
