"""The provider path compiled (mypyc) against pure Python: `bench_providers.py` in turns.

Run: ``.venv/bin/python bench/bench_compiled.py [--rounds 3] [--events 20000] [--repeats 5]
[--build DIR] [--baseline DIR]``

One process cannot hold both builds of a module, so this runs ``bench_providers.py``
in child processes, round-robin: the pure sources (the editable install), the
compiled build (a wheel built with ``STREAMFN_COMPILE=1`` unpacked into ``--build``,
put first on ``PYTHONPATH``, as ``.ci/run`` does), and optionally ``--baseline``,
another build unpacked the same way (e.g. the main branch's, to show the pure path
is no slower). Each child prints its times as ratios to the floor (msgspec alone,
timed in the same child), so a ratio holds up under a load that shifts between
children; each cell prints the best ratio over the rounds. The last column is the
compiled build's ``unframed`` (its provider loop on pre-split payloads: what
``events`` would cost if finding the events in the reads were free).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ROW = re.compile(r"^\| (?P<stream>[^|]+) \| (?P<chunks>[^|]+) \| (?P<cells>.+) \|$")
COLUMNS = ("floor", "split", "events", "+fold", "unframed")


def run_once(path: str | None, args: argparse.Namespace) -> dict[tuple[str, str], list[float]]:
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    if path:
        env["PYTHONPATH"] = path
    command = [sys.executable, str(ROOT / "bench" / "bench_providers.py")]
    command += ["--events", str(args.events), "--repeats", str(args.repeats)]
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=True)
    rows: dict[tuple[str, str], list[float]] = {}
    for line in done.stdout.splitlines():
        match = ROW.match(line)
        if match and not line.startswith("| stream") and not line.startswith("|---"):
            cells = [float(c) for c in match["cells"].split(" | ")][: len(COLUMNS)]
            rows[match["stream"].strip(), match["chunks"].strip()] = cells
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--build", default=str(ROOT / "build" / "compiled"))
    parser.add_argument("--baseline", help="another unpacked build to compare the pure path to")
    args = parser.parse_args()
    if not list(Path(args.build).rglob("_hot__mypyc*")):
        raise SystemExit(
            f"no compiled build in {args.build}: build one (docs/benchmarks.md, "
            "'The compiled hot path') or name it with --build"
        )
    modes: dict[str, str | None] = {"pure": None, "compiled": args.build}
    if args.baseline:
        modes = {"baseline": args.baseline, **modes}
    best: dict[str, dict[tuple[str, str], list[float]]] = {mode: {} for mode in modes}
    for _ in range(args.rounds):
        for mode, path in modes.items():
            for key, cells in run_once(path, args).items():
                seen = best[mode].setdefault(key, cells)
                best[mode][key] = [min(a, b) for a, b in zip(seen, cells, strict=True)]
    print(
        f"{args.events:,} deltas per stream; each child best of {args.repeats}, the best "
        f"of {args.rounds} rounds in turns; time / floor (`events`, `+fold`)"
    )
    print()
    heads = [f"{mode} events | {mode} +fold" for mode in modes]
    print(f"| stream | chunks | {' | '.join(heads)} | compiled unframed |")
    print("|---|---|" + "---|---|" * len(modes) + "---|")
    for key in best["pure"]:
        cells = []
        for mode in modes:
            row = best[mode][key]
            cells += [f"{row[COLUMNS.index('events')]:.2f}", f"{row[COLUMNS.index('+fold')]:.2f}"]
        cells.append(f"{best['compiled'][key][COLUMNS.index('unframed')]:.2f}")
        print(f"| {key[0]} | {key[1]} | {' | '.join(cells)} |")


if __name__ == "__main__":
    main()
