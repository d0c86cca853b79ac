"""The driver fuzz_sse.py and fuzz_ndjson.py share (see fuzz/README.md).

Each target supplies only its checks: a hypothesis round and an atheris
``one_input``. The environment variables and switches live here, so the
targets cannot drift apart in how they are run.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable


def split_by(data: bytes, sizes: list[int]) -> list[bytes]:
    """``data`` in pieces of ``sizes`` (possibly empty), then whatever is left."""
    chunks, pos = [], 0
    for size in sizes:
        chunks.append(data[pos : pos + size])
        pos += size
    return [*chunks, data[pos:]]


def atheris_main(argv: list[str], one_input: Callable[[bytes], None]) -> None:
    import atheris  # type: ignore[import-untyped,import-not-found,unused-ignore]

    atheris.Setup(argv, one_input)
    atheris.Fuzz()


def main(
    name: str, hypothesis_round: Callable[[int], None], one_input: Callable[[bytes], None]
) -> None:
    """``--atheris`` hands the rest of argv to libFuzzer; otherwise hypothesis rounds of
    ``FUZZ_EXAMPLES`` examples per property until ``FUZZ_SECONDS`` have passed."""
    if "--atheris" in sys.argv:
        atheris_main([arg for arg in sys.argv if arg != "--atheris"], one_input)
        return
    examples = int(os.environ.get("FUZZ_EXAMPLES", "100000"))
    deadline = time.monotonic() + float(os.environ.get("FUZZ_SECONDS", "0"))
    rounds = 0
    while True:
        hypothesis_round(examples)
        rounds += 1
        print(f"{name}: round {rounds} passed ({examples:,} examples per property)", flush=True)
        if time.monotonic() >= deadline:
            break
