"""Ctrl-C in the interactive chat stops the answer, not the session (a real process on a pty).

Linux only, as CI runs it: each Ctrl-C is sent once the process is blocked, which
`wait_until_blocked` reads from Linux's ``/proc/PID/wchan``. Elsewhere these tests
skip, saying so (under CI they would fail: see missing.py).
"""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest
from fake_provider import FakeProvider
from missing import missing

#: how long to wait for what surely comes (a hang guard, not a timing claim)
PATIENCE = 60


@pytest.fixture
def stalled() -> Iterator[FakeProvider]:
    """Answers stall half-way until the test is over: only Ctrl-C ends them."""
    with FakeProvider(stall=3600) as server:
        yield server


class _Terminal:
    """`streamfn chat` on a pseudo-terminal: what it printed, and a way to type."""

    def __init__(self, base_url: str) -> None:
        self.primary, secondary = pty.openpty()
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        env.update(NO_COLOR="1", TERM="dumb", OPENAI_API_KEY="sk-test")
        chat = ["chat", "-m", "openai:gpt-4o-mini", "--base-url", base_url]
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "streamfn.cli", *chat],
            stdin=secondary,
            stdout=secondary,
            stderr=secondary,
            env=env,
        )
        os.close(secondary)
        self.seen = bytearray()
        self.read_from = 0

    def expect(self, marker: bytes) -> None:
        """Wait until ``marker`` appears after what the last `expect` matched."""
        deadline = time.monotonic() + PATIENCE
        while (found := self.seen.find(marker, self.read_from)) < 0:
            assert time.monotonic() < deadline, f"no {marker!r} in {bytes(self.seen)!r}"
            if select.select([self.primary], [], [], 0.1)[0]:
                try:
                    self.seen += os.read(self.primary, 4096)
                except OSError:  # the process ended: the pty reads EIO
                    assert marker in self.seen[self.read_from :], bytes(self.seen)
        self.read_from = found + len(marker)

    def interrupt(self) -> None:
        """Ctrl-C, once the process waits for the stream or the keyboard."""
        wait_until_blocked(self.proc.pid)
        self.proc.send_signal(signal.SIGINT)

    def type(self, text: bytes) -> None:
        os.write(self.primary, text)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        os.close(self.primary)


def wait_until_blocked(pid: int) -> None:
    """Wait until the process sleeps in poll/select (a socket read, readline's prompt).

    A signal is only sure to be seen by a process blocked in the call: one that
    arrives just before it (after the interpreter's last check for signals) is
    noticed when the call returns, which for a stalled stream or an idle prompt
    is never. So each Ctrl-C here is sent once the process is blocked (Linux's
    ``/proc/PID/wchan``), an ordering rather than a delay.
    """
    if not os.path.exists("/proc/self/wchan"):  # not Linux (or no /proc)
        missing(
            "Linux's /proc/PID/wchan (Ctrl-C is sent once the process is blocked)",
            "run these tests on Linux, as CI does",
        )
    deadline = time.monotonic() + PATIENCE
    while True:
        with open(f"/proc/{pid}/wchan") as wchan:
            if any(call in wchan.read() for call in ("poll", "select")):
                return
        assert time.monotonic() < deadline, "the process never blocked"
        time.sleep(0.01)


def _wait_for(condition: Any) -> None:
    deadline = time.monotonic() + PATIENCE
    while not condition():
        assert time.monotonic() < deadline
        time.sleep(0.02)


def test_ctrl_c_ends_the_answer_and_the_chat_goes_on(stalled: FakeProvider) -> None:
    term = _Terminal(stalled.base_url("stall-mid", "openai-chat"))
    try:
        term.expect(b"> ")
        term.type(b"first question\r")
        term.expect(b"Hello")  # half the answer, then the stall
        term.interrupt()
        term.expect(b"answer interrupted; the conversation goes on")
        term.expect(b"> ")
        assert term.proc.poll() is None  # the session survived
        term.type(b"second question\r")
        _wait_for(lambda: len(stalled.requests) == 2)
        term.expect(b"Hello")
        term.interrupt()  # stops the second answer too
        term.expect(b"> ")
        term.interrupt()  # at the prompt: the chat ends
        assert term.proc.wait(timeout=PATIENCE) == 130
        term.expect(b"streamfn: interrupted")
    finally:
        term.close()
    second = json.loads(stalled.requests[1].body)["messages"]
    said = [(m["role"], m["content"]) for m in second]
    assert said[0] == ("user", "first question")
    role, partial = said[1]
    assert role == "assistant" and partial.startswith("Hello")
    assert partial.endswith("[interrupted by the user]")
    assert said[2] == ("user", "second question")


def test_ctrl_d_at_the_prompt_ends_the_chat_normally(stalled: FakeProvider) -> None:
    term = _Terminal(stalled.base_url("ok", "openai-chat"))
    try:
        term.expect(b"> ")
        term.type(b"\x04")
        assert term.proc.wait(timeout=PATIENCE) == 0
    finally:
        term.close()
