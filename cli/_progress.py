"""Progress of long steps (download, conversion, loading) as people read it on stderr."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import IO

__all__ = ["progress_printer", "transfer"]


def progress_printer(stream: IO[str] | None = None) -> Callable[[str, int, int], None]:
    """Progress on stderr: one line per stage, redrawn in place on a terminal.

    Download stages count bytes and show the amount, the rate and the time left.
    """
    out = stream or sys.stderr
    live = out.isatty()
    started: dict[str, float] = {}
    drawn = [0.0]

    def show(stage: str, done: int, total: int) -> None:
        now = time.monotonic()
        began = started.setdefault(stage, now)
        finished = done >= total
        if stage.startswith("downloading"):
            detail = " " + transfer(done, total, now - began)
        else:
            detail = f" {done}/{total}" if total > 1 and live else ""
        if live:
            if not finished and now - drawn[0] < 0.1 and done:
                return  # at most ten redraws a second
            drawn[0] = now
            out.write(f"\r\x1b[2K{stage}{detail}")
            if finished:
                out.write("\n")
        elif finished:
            out.write(f"{stage}{detail}: done\n")
        out.flush()

    return show


def transfer(done: int, total: int, elapsed: float) -> str:
    """``45.1/92.9 MB, 9.8 MB/s, 5 s left``"""
    text = f"{done / 1e6:.1f}/{total / 1e6:.1f} MB"
    if elapsed > 0 and done > 0:
        rate = done / elapsed
        text += f", {rate / 1e6:.1f} MB/s"
        if done < total:
            text += f", {max(total - done, 0) / rate:.0f} s left"
        else:
            text += f" in {elapsed:.1f} s"
    return text
