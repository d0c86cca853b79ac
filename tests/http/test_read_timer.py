"""The read timers, sans I/O: the clock is a number the test hands in."""

from __future__ import annotations

from streamfn.core import Options
from streamfn.core.http._read_timer import HEARTBEAT_BYTES, ReadTimer

OPTIONS = Options(first_byte_timeout=10.0, idle_timeout=2.0)


def test_nothing_before_the_body_restarts_the_first_byte_timer() -> None:
    timer = ReadTimer(OPTIONS, None)
    assert timer.next(0.0)[0] == 10.0
    assert timer.next(9.0)[0] == 10.0  # header bytes, interim responses: no body yet
    deadline, error = timer.next(9.5)
    assert deadline == 10.0 and error.message.startswith("first-byte timeout")


def test_heartbeats_keep_a_stream_open_within_the_allowance() -> None:
    timer = ReadTimer(OPTIONS, None)
    timer.next(0.0)
    timer.body(100, made_events=True)
    assert timer.next(1.0)[0] == 3.0
    now = 1.0
    for _ in range(HEARTBEAT_BYTES // 1024):  # 1 KiB comments, every second
        now += 1.0
        timer.body(1024, made_events=False)
        assert timer.next(now)[0] == now + 2.0


def test_past_the_allowance_bytes_without_events_do_not_restart_the_idle_timer() -> None:
    timer = ReadTimer(OPTIONS, None)
    timer.next(0.0)
    timer.body(100, made_events=True)
    assert timer.next(1.0)[0] == 3.0
    timer.body(HEARTBEAT_BYTES + 1, made_events=False)  # a flood
    deadline, error = timer.next(1.5)
    assert deadline == 3.0
    assert "no event for 2.0 s" in error.message and str(HEARTBEAT_BYTES + 1) in error.message
    timer.body(10, made_events=False)
    assert timer.next(2.5)[0] == 3.0  # still not progress
    timer.body(10, made_events=True)  # an event is, and it restores the allowance
    assert timer.next(2.6)[0] == 4.6
    timer.body(1024, made_events=False)
    assert timer.next(3.0)[0] == 5.0


def test_the_total_deadline_caps_both() -> None:
    timer = ReadTimer(Options(first_byte_timeout=10.0, idle_timeout=2.0, total_timeout=5.0), 5.0)
    deadline, error = timer.next(0.0)
    assert deadline == 5.0 and error.message.startswith("total timeout")
