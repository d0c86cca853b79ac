"""Streaming tool-call arguments, one character per delta, with a live view after each.

A model writing a file through a tool call streams its JSON arguments a token
at a time, and a UI re-renders the partial arguments after every delta. The
usual way to show them re-parses the whole prefix each time, which is
quadratic. This compares, on the same 16,000 one-character deltas of a
realistic nested arguments object:

- streamfn: `Accumulator.add` + `Accumulator.partial_arguments` after every
  delta (and, for reference, reading only at the end, and the bare
  `PartialJSONParser`);
- ``partial-json-parser`` (``partial_json_parser.loads``) on each prefix;
- pydantic-core ``from_json(prefix, allow_partial="trailing-strings")``;
- "close the brackets then json.loads", the hand-written repair many apps use.

Each contender's final value is checked against ``json.loads`` of the whole
text. Peers that are not installed are skipped. Run::

    .venv/bin/python bench/bench_fold.py [n_chars] [repeats]
"""

from __future__ import annotations

import contextlib
import json
import random
import sys
import time
from collections.abc import Callable
from typing import Any

from streamfn.core._accumulate import Accumulator
from streamfn.core._events import Done, Start, StopReason, ToolCallDelta, ToolCallEnd, ToolCallStart
from streamfn.core.json._partial_json import PartialJSONParser

_CODE_LINES = (
    "def handle(request):",
    "    user = request.user  # the caller, already authenticated",
    '    items = [i for i in request.items if i.get("enabled")]',
    '    return {"count": len(items), "user": user.name}',
    "",
    "class Cache:",
    '    """Keeps the last 128 answers; \\"hot\\" keys stay."""',
    "    def __init__(self) -> None:",
    "        self.entries: dict[str, bytes] = {}",
    "\tfor key, value in sorted(self.entries.items()):",
    "        print(f'{key} → {value!r} ✓')",
)


def tool_arguments(n_chars: int, seed: int = 0) -> str:
    """A pull-request tool call's arguments, exactly ``n_chars`` long as compact JSON."""
    rng = random.Random(seed)

    def code(lines: int) -> str:
        return "\n".join(rng.choice(_CODE_LINES) for _ in range(lines)) + "\n"

    changes = [
        {
            "path": f"src/service/module_{i}.py",
            "action": rng.choice(["create", "update"]),
            "content": code(rng.randint(8, 20)),
            "mode": "100644",
            "hunks": [
                {"start": rng.randint(1, 400), "length": rng.randint(1, 40), "context": 3}
                for _ in range(rng.randint(1, 3))
            ],
        }
        for i in range(12)
    ]
    args: dict[str, Any] = {
        "repository": {"owner": "example", "name": "service", "default_branch": "main"},
        "title": "Cache answers and tidy the request handler",
        "description": "",
        "changes": changes,
        "reviewers": ["alice", "bob"],
        "labels": ["performance", "refactor"],
        "draft": False,
        "metadata": {"ticket": 4321, "risk": 0.25, "automerge": None},
    }
    base = len(json.dumps(args, separators=(",", ":"), ensure_ascii=False))
    if base > n_chars:
        raise ValueError(f"n_chars must be at least {base}")
    args["description"] = ("This change adds a cache. " * (n_chars // 26 + 1))[: n_chars - base]
    text = json.dumps(args, separators=(",", ":"), ensure_ascii=False)
    assert len(text) == n_chars
    return text


# -- contenders: each takes the deltas, reads a value after every one, returns the last --


def streamfn_accumulator(deltas: list[str]) -> Any:
    acc = Accumulator()
    acc.add(Start(api="bench", provider="bench", model="bench"))
    acc.add(ToolCallStart(0, "call_1", "open_pull_request"))
    value: Any = None
    for delta in deltas:
        acc.add(ToolCallDelta(0, delta))
        value = acc.partial_arguments(0)
    acc.add(ToolCallEnd(0))
    acc.add(Done(stop_reason=StopReason.TOOL_USE))
    assert acc.message.tool_calls[0].arguments == value
    return value


def streamfn_accumulator_read_at_end(deltas: list[str]) -> Any:
    acc = Accumulator()
    acc.add(Start(api="bench", provider="bench", model="bench"))
    acc.add(ToolCallStart(0, "call_1", "open_pull_request"))
    for delta in deltas:
        acc.add(ToolCallDelta(0, delta))
    acc.add(ToolCallEnd(0))
    acc.add(Done(stop_reason=StopReason.TOOL_USE))
    return acc.message.tool_calls[0].arguments


def streamfn_parser(deltas: list[str]) -> Any:
    parser = PartialJSONParser()
    value: Any = None
    for delta in deltas:
        parser.feed(delta)
        value = parser.value()
    return value


def _per_prefix(parse: Callable[[str], Any]) -> Callable[[list[str]], Any]:
    def run(deltas: list[str]) -> Any:
        prefix = ""
        value: Any = None
        for delta in deltas:
            prefix += delta
            with contextlib.suppress(ValueError):  # keep showing the last good value
                value = parse(prefix)
        return value

    return run


def close_brackets_then_json_loads(prefix: str) -> Any:
    """The common hand-written repair: scan for open strings and brackets, close them, parse."""
    stack: list[str] = []
    in_string = escaped = False
    for char in prefix:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            stack.append("]" if char == "[" else "}")
        elif char in "]}":
            stack.pop()
    repaired = prefix.rstrip().removesuffix(",")
    if escaped:
        repaired = repaired[:-1]
    if in_string:
        repaired += '"'
    return json.loads(repaired + "".join(reversed(stack)))


def contenders() -> list[tuple[str, Callable[[list[str]], Any]]]:
    found: list[tuple[str, Callable[[list[str]], Any]]] = [
        ("streamfn Accumulator, read after every delta", streamfn_accumulator),
        ("streamfn Accumulator, read at the end only", streamfn_accumulator_read_at_end),
        ("streamfn PartialJSONParser, read after every delta", streamfn_parser),
    ]
    try:
        import partial_json_parser

        found.append(("partial-json-parser loads(prefix)", _per_prefix(partial_json_parser.loads)))
    except ImportError:
        print("(partial-json-parser not installed: pip install partial-json-parser)")
    try:
        import pydantic_core

        def pydantic_partial(prefix: str) -> Any:
            return pydantic_core.from_json(prefix, allow_partial="trailing-strings")

        found.append(
            ("pydantic-core from_json(prefix, allow_partial)", _per_prefix(pydantic_partial))
        )
    except ImportError:
        print("(pydantic-core not installed)")
    found.append(
        ("close brackets + json.loads(prefix)", _per_prefix(close_brackets_then_json_loads))
    )
    return found


def main() -> None:
    n_chars = int(sys.argv[1]) if len(sys.argv) > 1 else 16_000
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    text = tool_arguments(n_chars)
    deltas = list(text)
    final = json.loads(text)
    print(
        f"{len(deltas):,} one-character deltas of a {len(text):,}-character arguments object; "
        f"best of {repeats} interleaved runs each"
    )
    print(f"{'contender':<52} {'total':>10} {'per delta':>12}")
    runs = contenders()
    for name, run in runs:
        if run(deltas) != final:
            raise SystemExit(f"{name}: final value differs from json.loads")
    best = dict.fromkeys((name for name, _ in runs), float("inf"))
    for _ in range(repeats):  # round-robin: load on a shared machine hits every contender alike
        for name, run in runs:
            best[name] = min(best[name], _best_of(1, run, deltas))
    for name, seconds in best.items():
        print(f"{name:<52} {seconds * 1e3:>8.1f} ms {seconds / len(deltas) * 1e6:>9.2f} µs")
    # Linear means four times the deltas cost four times as much (the peers: sixteen).
    small = _best_of(5, streamfn_accumulator, deltas)
    large = _best_of(5, streamfn_accumulator, list(tool_arguments(4 * n_chars)))
    print(
        f"scaling: streamfn Accumulator, read after every delta, {4 * n_chars:,} deltas: "
        f"{large * 1e3:.1f} ms = {large / small:.1f}x the time for 4x the deltas"
    )


def _best_of(repeats: int, run: Callable[[list[str]], Any], deltas: list[str]) -> float:
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        run(deltas)
        best = min(best, time.perf_counter() - started)
    return best


if __name__ == "__main__":
    main()
