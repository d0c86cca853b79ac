"""A real PostgreSQL server for the tests: Debian's binaries, a temporary cluster, a socket.

`postgres_server` runs ``initdb`` into a temporary folder and ``pg_ctl start``
with no TCP listener (its Unix socket lives in that folder, so no port can
clash with another run), and yields a `Postgres` that makes a fresh database per
test. PostgreSQL refuses to run as root: as root (CI) the cluster belongs to the
``postgres`` user Debian's package creates (else ``nobody``) and runs as it
through ``runuser``. Without the binaries, the test is `missing` (a failure
under CI, whose ``.ci/run`` installs them).
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import count
from pathlib import Path

from missing import missing

#: the port names the socket file (``.s.PGSQL.<port>``) in the cluster's own folder
PORT = 5432
SUPERUSER = "streamfn"


def binaries() -> Path | None:
    """The folder holding ``initdb`` and ``pg_ctl``: on PATH, else Debian's newest."""
    found = shutil.which("pg_ctl")
    if found and shutil.which("initdb"):
        return Path(found).resolve().parent
    versions = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"),
        key=lambda p: int(Path(p).parts[-3]) if Path(p).parts[-3].isdigit() else 0,
    )
    return Path(versions[-1]).parent if versions else None


@dataclass
class Postgres:
    socket_dir: Path
    _names: Iterator[int]

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{SUPERUSER}@/{database}?host={self.socket_dir}&port={PORT}"

    def fresh_database(self) -> str:
        """The URL of a new, empty database."""
        import psycopg

        name = f"t{os.getpid()}_{next(self._names)}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")  # a name made here, not input
        return self.url(name)


def _as_owner(command: list[str], owner: str | None) -> list[str]:
    return command if owner is None else ["runuser", "-u", owner, "--", *command]


@contextmanager
def postgres_server() -> Iterator[Postgres]:
    """A PostgreSQL server running for the ``with`` block, stopped and removed after it."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        missing("psycopg (the PostgreSQL store's driver)", "pip install -e '.[test]'")
    bin_dir = binaries()
    if bin_dir is None:
        missing(
            "PostgreSQL (initdb, pg_ctl)",
            "apt-get install postgresql (Debian's package; .ci/run installs it)",
        )
    owner: str | None = None
    if os.geteuid() == 0:  # initdb and postgres refuse root
        for name in ("postgres", "nobody"):
            try:
                pwd.getpwnam(name)
            except KeyError:
                continue
            owner = name
            break
    root = Path(tempfile.mkdtemp(prefix="sfnpg"))
    data = root / "data"
    try:
        if owner is not None:
            entry = pwd.getpwnam(owner)
            os.chown(root, entry.pw_uid, entry.pw_gid)
        subprocess.run(
            _as_owner(
                [str(bin_dir / "initdb"), "-D", str(data), "-U", SUPERUSER, "--auth=trust",
                 "--no-sync", "-E", "UTF8", "--locale=C"],
                owner,
            ),
            check=True, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        options = f"-k {root} -p {PORT} -c listen_addresses='' -c fsync=off -c max_connections=200"
        subprocess.run(
            _as_owner(
                [str(bin_dir / "pg_ctl"), "start", "-w", "-t", "60", "-D", str(data),
                 "-l", str(root / "log"), "-o", options],
                owner,
            ),
            check=True, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    except subprocess.CalledProcessError as exc:
        log = root / "log"
        said = log.read_text(errors="replace") if log.exists() else ""
        shutil.rmtree(root, ignore_errors=True)
        raise RuntimeError(f"PostgreSQL did not start ({exc.cmd}): {exc.stderr}\n{said}") from None
    try:
        yield Postgres(root, count())
    finally:
        subprocess.run(
            _as_owner([str(bin_dir / "pg_ctl"), "stop", "-m", "immediate", "-D", str(data)], owner),
            check=False, capture_output=True, timeout=60,
        )  # fmt: skip
        shutil.rmtree(root, ignore_errors=True)
