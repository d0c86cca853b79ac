"""The dashboard's board under ``streamfn serve --workers N``: each worker's snapshot
of what only its own memory holds (its streams in flight, its deployments' rests),
so whichever worker answers the page shows the whole server.

The supervisor makes one directory (mode 0700, removed when it stops) and names it
in `BOARD_ENV`. A worker answering the dashboard touches ``wanted`` there; every
worker looks at that file once a second and, while the dashboard was asked within
`WATCHED_FOR` seconds, writes its `Snapshot` (a temporary file renamed over its own,
so a reader never sees half of one). Nobody looking costs each worker one ``stat`` a
second. A snapshot older than `STALE` seconds or whose process is gone is a dead
worker's: readers ignore and remove it. A snapshot holds what the dashboard shows and
nothing more: a client key by its id and name, never a secret.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import msgspec

from ._metrics import MULTIPROCESS_ENV

__all__ = [
    "BOARD_ENV",
    "MAX_ROWS",
    "STALE",
    "WATCHED_FOR",
    "WORKERS_ENV",
    "Board",
    "Snapshot",
    "board_from_environment",
    "capped",
    "shared_by_workers",
]

#: the directory the workers' snapshots meet in, set by the supervisor
BOARD_ENV: Final = "STREAMFN_DASHBOARD_DIR"
#: how many workers the supervisor started (what a whole answer counts)
WORKERS_ENV: Final = "STREAMFN_DASHBOARD_WORKERS"
#: the most flights one snapshot lists; the rest are counted in ``not_shown``
MAX_ROWS: Final = 1000
#: seconds after which a snapshot is a dead (or no longer asked) worker's
STALE: Final = 5.0
#: seconds the workers keep writing after the dashboard was last asked
WATCHED_FOR: Final = 60.0
#: a snapshot file larger than this is not read (MAX_ROWS rows are far smaller)
_MAX_FILE_BYTES: Final = 16 * 1024 * 1024
_WANTED: Final = "wanted"
_PREFIX, _SUFFIX = "worker-", ".json"


class Snapshot(msgspec.Struct, kw_only=True):
    """One worker's view at ``written`` (Unix seconds): its flights as `flights_view`
    makes them (at most `MAX_ROWS`, ``not_shown`` more) and its `deployments_view`."""

    pid: int
    written: float
    flights: list[dict[str, Any]]
    not_shown: int = 0
    deployments: dict[str, Any] = msgspec.field(default_factory=dict)


def capped(
    pid: int, written: float, flights: list[dict[str, Any]], deployments: dict[str, Any]
) -> Snapshot:
    """A snapshot of at most `MAX_ROWS` flights (the oldest: ``flights`` is oldest
    first), counting the rest: a worker with a flood of streams writes a bounded file."""
    return Snapshot(
        pid=pid,
        written=written,
        flights=flights[:MAX_ROWS],
        not_shown=max(0, len(flights) - MAX_ROWS),
        deployments=deployments,
    )


class Board:
    """One worker's side of the shared directory."""

    def __init__(self, directory: Path, pid: int, workers: int) -> None:
        self.directory, self.pid, self.workers = directory, pid, workers
        self._decoder = msgspec.json.Decoder(Snapshot)

    @property
    def own(self) -> Path:
        return self.directory / f"{_PREFIX}{self.pid}{_SUFFIX}"

    def ask(self, now: float) -> bool:
        """Say the dashboard is being looked at; whether it already was (the other
        workers are writing), so a caller waking them knows to give them a moment."""
        was = self.wanted(now)
        wanted = self.directory / _WANTED
        wanted.touch(mode=0o600)
        os.utime(wanted, (now, now))
        return was

    def wanted(self, now: float) -> bool:
        try:
            return now - (self.directory / _WANTED).stat().st_mtime < WATCHED_FOR
        except FileNotFoundError:
            return False

    def publish(self, snapshot: Snapshot) -> None:
        """Write this worker's snapshot whole: a temporary file renamed over the last."""
        temporary = self.directory / f".{_PREFIX}{self.pid}.tmp"
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "wb") as file:
            file.write(msgspec.json.encode(snapshot))
        os.replace(temporary, self.own)

    def others(self, now: float) -> list[Snapshot]:
        """The other live workers' snapshots; a dead worker's file is removed."""
        found = []
        for path in sorted(self.directory.glob(f"{_PREFIX}*{_SUFFIX}")):
            if path == self.own:
                continue
            snapshot = self._read(path)
            if snapshot is None or now - snapshot.written > STALE or not _alive(snapshot.pid):
                # its owner may have replaced it since the read: only a dead worker's goes
                if snapshot is None or not _alive(snapshot.pid):
                    with contextlib.suppress(FileNotFoundError):
                        path.unlink()
                continue
            found.append(snapshot)
        return found

    def withdraw(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.own.unlink()

    def _read(self, path: Path) -> Snapshot | None:
        try:
            with path.open("rb") as file:
                data = file.read(_MAX_FILE_BYTES + 1)
            if len(data) > _MAX_FILE_BYTES:
                return None
            return self._decoder.decode(data)
        except (OSError, msgspec.DecodeError):
            return None


@contextlib.contextmanager
def shared_by_workers(workers: int) -> Iterator[None]:
    """The supervisor's directories its ``workers`` meet in, named in the environment
    the workers inherit: the metrics' (so any worker answers a scrape whole) and the
    dashboard's board; each made 0700 and removed when the block ends."""
    with (
        tempfile.TemporaryDirectory(prefix="streamfn-metrics-") as metrics,
        tempfile.TemporaryDirectory(prefix="streamfn-dashboard-") as board,
    ):
        names = (MULTIPROCESS_ENV, BOARD_ENV, WORKERS_ENV)
        before = {name: os.environ.get(name) for name in names}
        os.environ[MULTIPROCESS_ENV] = metrics
        os.environ[BOARD_ENV], os.environ[WORKERS_ENV] = board, str(workers)
        try:
            yield
        finally:  # the folders are gone: nothing started later may be pointed at them
            for name, value in before.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value


def board_from_environment(pid: int) -> Board | None:
    """This worker's board when a supervisor made one, else None (one process: the
    dashboard reads its own memory)."""
    directory = os.environ.get(BOARD_ENV)
    if not directory:
        return None
    try:
        workers = max(1, int(os.environ.get(WORKERS_ENV, "1")))
    except ValueError:
        workers = 1
    return Board(Path(directory), pid, workers)


def _alive(pid: int) -> bool:
    if os.name != "posix":  # no harmless probe there: age alone decides
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
