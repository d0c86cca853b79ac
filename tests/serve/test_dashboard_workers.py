"""The dashboard whole across ``streamfn serve --workers N``: whichever worker answers
lists every worker's streams in flight (each naming its worker), a dead worker's
snapshot is ignored and removed, and no snapshot holds a secret. The board's merging
rules (rows capped, rests merged) are checked here without processes too."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from contextlib import AbstractContextManager
from pathlib import Path

import httpx
import pytest
from fake_provider import FakeProvider
from loopback_server import HANG_GUARD, KEY, USER, raw_post, serve_cli, wait_until

from streamfn.asgi._admin_views import merged_deployments, merged_flights
from streamfn.asgi._board import MAX_ROWS, STALE, Board, Snapshot, capped

ADMIN = "admin-key-for-the-workers-test-0123"
TEAM_SECRET = "sk-team-upstream-secret-4242"
SLOW_MODEL = "team-slow"


def _flights(url: str) -> dict[str, object]:
    # a fresh connection each time: the kernel hands it to either worker
    answer = httpx.get(
        url + "/admin/api/flights",
        headers={"authorization": f"Bearer {ADMIN}", "connection": "close"},
        timeout=HANG_GUARD,
    )
    assert answer.status_code == 200, answer.text
    body: dict[str, object] = answer.json()
    return body


def _rows(answer: dict[str, object]) -> list[dict[str, object]]:
    rows = answer["flights"]
    assert isinstance(rows, list)
    return rows


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


@pytest.mark.parametrize("shell", ["asyncio", "trio"])
def test_either_worker_lists_every_workers_streams(tmp_path: Path, shell: str) -> None:
    with (
        FakeProvider(stall=HANG_GUARD * 4) as upstream,
        _served(tmp_path, upstream, shell) as url,
    ):
        board = _board_dir(tmp_path)
        assert stat.S_IMODE(board.stat().st_mode) == 0o700
        body = json.dumps({"model": SLOW_MODEL, "messages": USER, "stream": True}).encode()
        port = int(url.rsplit(":", 1)[1])
        streams = []
        workers: set[object] = set()
        # streams held open (the upstream stalls mid-answer) until both workers hold one
        while len(workers) < 2:
            assert len(streams) < 24, "the kernel never gave the second worker a stream"
            sock = raw_post(port, "/v1/chat/completions", body)
            sock.settimeout(HANG_GUARD)
            assert sock.recv(4096).startswith(b"HTTP/1.1 200")
            streams.append(sock)
            wait_until(lambda: len(_rows(_flights(url))) == len(streams), HANG_GUARD)
            workers = {row["worker"] for row in _rows(_flights(url))}
        # each worker answers with them all once the other's snapshot caught up (it is
        # rewritten each second): then every answer, from either worker, lists them all
        whole_from: set[object] = set()

        def answered_whole() -> bool:
            answer = _flights(url)
            if len(_rows(answer)) == len(streams):
                whole_from.add(answer["answered_by"])
            return whole_from == workers

        wait_until(answered_whole, HANG_GUARD)
        for _ in range(10):
            answer = _flights(url)
            assert answer["whole"] is True and answer["workers"] == 2
            assert len(_rows(answer)) == len(streams), answer
            assert {row["worker"] for row in _rows(answer)} == workers
        # the snapshots: their rows, never a secret
        snapshots = sorted(board.glob("worker-*.json"))
        assert len(snapshots) == 2
        for path in snapshots:
            text = path.read_text()
            assert stat.S_IMODE(path.stat().st_mode) == 0o600
            for secret in (TEAM_SECRET, ADMIN, KEY):
                assert secret not in text
            assert SLOW_MODEL in text
        # a dead worker's snapshot, written just now: ignored, then removed
        dead = _dead_pid()
        ghost = {"pid": dead, "written": time.time(), "flights": [_ghost_row()]}
        (board / f"worker-{dead}.json").write_text(json.dumps(ghost))
        answer = _flights(url)
        assert len(_rows(answer)) == len(streams) and answer["workers"] == 2
        assert not (board / f"worker-{dead}.json").exists()
        for sock in streams:
            sock.close()
        wait_until(lambda: _rows(_flights(url)) == [], HANG_GUARD)
    assert not board.exists()  # the supervisor removes its board as it stops


def _served(tmp_path: Path, upstream: FakeProvider, shell: str) -> AbstractContextManager[str]:
    config = tmp_path / "gateway.toml"
    config.write_text(
        "[[models]]\n"
        f'name = "{SLOW_MODEL}"\n'
        'upstream = "openai:gpt-4o-mini"\n'
        f'base_url = "{upstream.base_url("stall-mid", "openai-chat", "workers")}"\n'
        'api_key_env = "TEAM_KEY"\n'
    )
    environ = {
        "TEAM_KEY": TEAM_SECRET,
        "STREAMFN_ADMIN_KEY": ADMIN,
        "TMPDIR": str(tmp_path),  # where the supervisor makes its board: seen by this test
        "PROMETHEUS_MULTIPROC_DIR": "",
    }
    return serve_cli(["--config", str(config), "--workers", "2", "--shell", shell], environ)


def _board_dir(tmp_path: Path) -> Path:
    # the start line comes first: the supervisor makes its board as it starts workers
    wait_until(lambda: any(tmp_path.glob("streamfn-dashboard-*")), HANG_GUARD)
    (board,) = tmp_path.glob("streamfn-dashboard-*")
    return board


def _ghost_row(**fields: object) -> dict[str, object]:
    return {"id": "ghost", "route": "/v1/messages", "model": "ghost", "age": 1.0, **fields}


def _snapshot(pid: int, written: float, rows: int = 0, **fields: object) -> Snapshot:
    flights = [_ghost_row(id=f"r{i}", age=float(i)) for i in range(rows)]
    return Snapshot(pid=pid, written=written, flights=flights, **fields)  # type: ignore[arg-type]


def test_a_stale_or_dead_workers_snapshot_is_ignored_and_removed(tmp_path: Path) -> None:
    now = time.time()
    mine, live = Board(tmp_path, os.getpid(), 3), Board(tmp_path, os.getppid(), 3)
    live.publish(_snapshot(os.getppid(), now, rows=2))
    dead = _dead_pid()
    Board(tmp_path, dead, 3).publish(_snapshot(dead, now, rows=1))
    (tmp_path / "worker-1.json").write_text("{not json")
    mine.publish(_snapshot(os.getpid(), now))
    assert [s.pid for s in mine.others(now)] == [os.getppid()]  # not its own, not the dead
    assert {p.name for p in tmp_path.glob("worker-*")} == {
        f"worker-{os.getpid()}.json",
        f"worker-{os.getppid()}.json",
    }
    assert mine.others(now + STALE + 1) == []  # it stopped writing: gone too
    answer = merged_flights(_snapshot(os.getpid(), now), [], 3)
    assert answer["whole"] is False and answer["workers"] == 1


def test_nobody_looking_nobody_writes_and_asking_wakes_them(tmp_path: Path) -> None:
    now = time.time()
    board = Board(tmp_path, os.getpid(), 2)
    assert board.wanted(now) is False
    assert board.ask(now) is False  # it was not: the caller gives the others a moment
    assert board.wanted(now + 1) is True and board.ask(now + 1) is True
    assert board.wanted(now + 120) is False


def test_rows_merge_oldest_first_naming_their_worker_and_count_the_rest() -> None:
    own = _snapshot(1, 100.0, rows=2, not_shown=5)
    other = _snapshot(2, 98.5, rows=2)  # written 1.5 s before: its streams are older now
    answer = merged_flights(own, [other], 2)
    assert [(r["worker"], r["age"]) for r in _rows(answer)] == [
        (2, 2.5),
        (2, 1.5),
        (1, 1.0),
        (1, 0.0),
    ]
    assert answer["not_shown"] == 5 and answer["whole"] is True and answer["answered_by"] == 1


def test_a_snapshot_keeps_the_oldest_rows_and_counts_the_rest() -> None:
    rows = [_ghost_row(id=f"r{i}", age=float(-i)) for i in range(MAX_ROWS + 7)]
    snapshot = capped(1, 100.0, rows, {})
    assert len(snapshot.flights) == MAX_ROWS and snapshot.not_shown == 7
    assert snapshot.flights[0]["id"] == "r0" and snapshot.flights[-1]["id"] == f"r{MAX_ROWS - 1}"


def test_a_deployment_resting_in_any_worker_rests_there() -> None:
    def health(resting: float, in_flight: int, error: str | None) -> dict[str, object]:
        return {
            "deployment": "east",
            "name": "fast",
            "in_flight": in_flight,
            "requests": 10,
            "failures": 1 if error else 0,
            "cooling_for": resting,
            "last_error": error,
        }

    def report(*rows: dict[str, object]) -> dict[str, object]:
        return {"available": True, "deployments": list(rows)}

    own = _snapshot(1, 100.0, deployments=report(health(0.0, 2, None)))
    other = _snapshot(2, 100.0, deployments=report(health(12.5, 1, "rate_limit")))
    third = _snapshot(3, 100.0, deployments=report(health(3.0, 0, "timeout")))
    merged = merged_deployments(own, [other, third])
    assert merged["workers"] == 3 and merged["available"] is True
    (east,) = merged["deployments"]
    assert east["cooling_for"] == 12.5 and east["resting_in"] == [2, 3]
    assert (east["in_flight"], east["requests"], east["failures"]) == (3, 30, 2)
