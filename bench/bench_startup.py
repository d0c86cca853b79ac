"""Warm start of the command line: `streamfn chat "Hi"` until its first token on stdout.

"Warm" means the model is already prepared and the OS file cache holds it, as on
every run after the first. Each run is a fresh process, exactly what a user
types; the time is measured from spawning it to the first byte of the answer
on its stdout, then to its exit.

    .venv/bin/python bench/bench_startup.py --repeat 9
    .venv/bin/python bench/bench_startup.py --baseline ../old-checkout/.venv/bin/streamfn
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path


def one_run(command: list[str], env: dict[str, str]) -> tuple[float, float, float]:
    """(seconds to the first stdout byte, seconds to exit, CPU seconds) of one process.

    CPU time (user + system of the process and its threads) hardly depends on what
    else the machine is doing, so it compares two versions fairly on a busy machine.
    """
    cpu_before = _children_cpu()
    began = time.perf_counter()
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert proc.stdout is not None
    first = proc.stdout.read(1)
    first_at = time.perf_counter() - began
    _, err = proc.communicate()
    ended = time.perf_counter() - began
    if proc.returncode != 0 or not first:
        raise SystemExit(f"{' '.join(command)} failed ({proc.returncode}): {err.decode()[-500:]}")
    return first_at, ended, _children_cpu() - cpu_before


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument(
        "--streamfn",
        default=str(Path(sys.executable).with_name("streamfn")),
        help="the streamfn executable (default: the one beside this Python)",
    )
    parser.add_argument(
        "--baseline",
        help="another streamfn executable (an older checkout) to time in alternation",
    )
    parser.add_argument("chat_args", nargs="*", help="extra `streamfn chat` arguments")
    args = parser.parse_args()
    executables = [args.streamfn, *([args.baseline] if args.baseline else [])]
    commands = [[exe, "chat", "--max-tokens", "8", *args.chat_args, "Hi"] for exe in executables]
    env = dict(os.environ)
    for command in commands:
        one_run(command, env)  # warm-up: prepares the model if needed, fills the file cache
    runs: list[list[tuple[float, float, float]]] = [[] for _ in commands]
    for _ in range(args.repeat):  # alternating, so a busy moment hits both alike
        for command, timings in zip(commands, runs, strict=True):
            timings.append(one_run(command, env))
    for command, timings in zip(commands, runs, strict=True):
        firsts = [first for first, _, _ in timings]
        totals = [total for _, total, _ in timings]
        cpus = [cpu for _, _, cpu in timings]
        print(f"command: {' '.join(command)}")
        print(
            f"  first token: median {statistics.median(firsts) * 1000:.0f} ms "
            f"(min {min(firsts) * 1000:.0f}, max {max(firsts) * 1000:.0f}); "
            f"whole run: median {statistics.median(totals) * 1000:.0f} ms, "
            f"CPU {statistics.median(cpus) * 1000:.0f} ms; {args.repeat} runs"
        )


if __name__ == "__main__":
    main()
