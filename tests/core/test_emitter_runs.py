"""`Emitter.texts` / `thinkings` / `tool_deltas` (a provider's run of deltas in
one call) against the one-delta methods they stand for.

The oracle is the one-by-one path: the same operations applied delta by delta
must give the same events, the same content count and the same error (the
cap falling inside a run, a run for a block that never opened, a run after
the stream ended), whatever the runs and the cap.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from streamfn.core._emitter import Emitter
from streamfn.core._events import Cost, StopReason, Usage

# One step: ("text" | "thinking" | "tool", key, deltas), ("start", key) opens a
# tool call, ("done",) ends the stream.
_deltas = st.lists(st.sampled_from(["", "a", "bc", "déf", "🙂🙂"]), min_size=1, max_size=6)
_step = st.one_of(
    st.tuples(st.sampled_from(["text", "thinking", "tool"]), st.integers(0, 2), _deltas),
    st.tuples(st.just("start"), st.integers(0, 2)),
    st.tuples(st.just("done")),
)


def _apply(steps: list[tuple[Any, ...]], cap: int | None, runs: bool) -> tuple[list[Any], Any]:
    emit = Emitter(max_content_bytes=cap)
    raised: object = None
    one = {"text": emit.text, "thinking": emit.thinking, "tool": emit.tool_delta}
    many = {"text": emit.texts, "thinking": emit.thinkings, "tool": emit.tool_deltas}
    for step in steps:
        try:
            if step[0] == "start":
                emit.tool_start(step[1], f"id{step[1]}", "f")
            elif step[0] == "done":
                emit.done(StopReason.STOP, Usage(), Cost())
            elif runs:
                many[step[0]](step[1], list(step[2]))
            else:
                for delta in step[2]:
                    one[step[0]](step[1], delta)
        except ValueError as exc:
            raised = str(exc)
            break
    return emit.drain(), raised


@given(st.lists(_step, max_size=12), st.one_of(st.none(), st.integers(0, 30)))
def test_a_run_gives_what_its_deltas_give_one_by_one(
    steps: list[tuple[Any, ...]], cap: int | None
) -> None:
    assert _apply(steps, cap, runs=True) == _apply(steps, cap, runs=False)


@pytest.mark.parametrize("kind", ["text", "thinking"])
@pytest.mark.parametrize("cap", [3, 4, 5, 6])
def test_the_cap_inside_a_run_ends_the_stream_at_that_delta(kind: str, cap: int) -> None:
    # the first run opens the block (one by one); the later ones are whole runs
    steps: list[tuple[Any, ...]] = [
        (kind, 0, ["x"]),
        (kind, 0, ["ab", "c"]),
        (kind, 0, ["de", "f"]),
    ]
    events, _ = _apply(steps, cap, runs=True)
    assert events == _apply(steps, cap, runs=False)[0]
    assert type(events[-1]).__name__ == "Error" and "max_content_bytes" in events[-1].message


def test_the_cap_inside_a_run_of_tool_arguments() -> None:
    steps: list[tuple[Any, ...]] = [
        ("start", 0),
        ("tool", 0, ["{", '"a"']),
        ("tool", 0, [":1", "}"]),
    ]
    for cap in range(2, 7):  # the arguments are 7 characters
        events, _ = _apply(steps, cap, runs=True)
        assert events == _apply(steps, cap, runs=False)[0]
        assert type(events[-1]).__name__ == "Error"


def test_tool_arguments_for_a_call_that_never_started_are_refused_in_a_run_too() -> None:
    assert _apply([("tool", 1, ["", "{"])], None, runs=True)[1] == (
        "tool-call arguments for a call that never started (1)"
    )
