""".ci/run stops when what the tests need cannot be installed, instead of going on to a
suite whose tests would then skip (or, under CI, fail far from the cause).

The front-end clients' install step is cut out of .ci/run and run by bash with a
fake ``npm`` (and ``node``) first on PATH: an ``npm`` that fails must end the step
with a non-zero status and a line naming what failed; one that succeeds lets it go on.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _node_step() -> str:
    script = (ROOT / ".ci" / "run").read_text()
    start = script.index("# The front-end protocol tests")
    return script[start : script.index('echo "== ruff"')]


def _run_step(tmp_path: Path, npm_status: int) -> subprocess.CompletedProcess[str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, status in (("node", 0), ("npm", npm_status)):
        fake = bin_dir / name
        fake.write_text(f"#!/bin/sh\nexit {status}\n")
        fake.chmod(0o755)
    step = "set -euo pipefail\n" + _node_step() + "echo the-step-went-on\n"
    return subprocess.run(
        ["bash", "-c", step],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={
            "PATH": f"{bin_dir}:/usr/bin:/bin",
            "HOME": str(tmp_path),
            "STREAMFN_NODE_DIR": str(tmp_path / "clients"),
        },
    )


def test_a_failed_npm_install_stops_ci(tmp_path: Path) -> None:
    done = _run_step(tmp_path, npm_status=1)
    assert done.returncode != 0, done.stdout
    assert "the-step-went-on" not in done.stdout
    assert "npm install of the node clients" in done.stdout + done.stderr


def test_a_working_npm_install_lets_ci_go_on(tmp_path: Path) -> None:
    done = _run_step(tmp_path, npm_status=0)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "the-step-went-on" in done.stdout
