"""The build's one dynamic part: the streaming hot path compiled with mypyc, opted in.

Everything else about the package is in pyproject.toml. A plain build (``pip install``,
the editable installs the README uses) is pure Python and quick. With
``STREAMFN_COMPILE=1`` in the environment, a wheel (``pip wheel .``, ``pip install .``)
also compiles the modules pyproject.toml's ``[tool.streamfn.compiled]`` lists, from the
same files, into extension modules that Python imports in their place; their ``.py``
files ship beside them. mypy (which ships mypyc) joins the build's requirements then,
and a C compiler must be present: without one the build says so and falls back to the
pure modules (``streamfn --version`` says which one runs). An editable build is never
compiled: its extension modules would go on running the code of the day they were
built, whatever the sources say since.
"""

from __future__ import annotations

import os
import shutil
import sys
import tomllib
from pathlib import Path
from typing import Any

from setuptools import setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent
#: the opt-in: compile the hot path when this is "1"
OPT_IN = "STREAMFN_COMPILE"
#: what compiles it (mypyc ships with mypy); the version the code was checked with or newer
MYPYC = "mypy>=1.10"
#: the group's shared library, a private module of the package: ``streamfn._hot__mypyc``
GROUP = "streamfn._hot"


def _config() -> dict[str, Any]:
    with open(ROOT / "pyproject.toml", "rb") as file:
        return tomllib.load(file)


def compiled_files(config: dict[str, Any]) -> list[Path]:
    """The files pyproject.toml lists for compiling: its globs, less its ``pure`` list
    and any package ``__init__``."""
    listed = config["tool"]["streamfn"]["compiled"]
    found: set[Path] = set()
    for pattern in listed["modules"]:
        found.update(p for p in ROOT.glob(pattern) if p.name != "__init__.py")
    return sorted(found - {ROOT / path for path in listed.get("pure", [])})


def _package_tree(config: dict[str, Any], into: Path) -> Path:
    """The installed layout (``streamfn/core/...``) as links to the checkout's folders,
    so mypyc names each module as Python will import it (pyproject maps
    ``streamfn.core`` to ``core/`` and so on)."""
    if into.exists():
        shutil.rmtree(into)
    mapping: dict[str, str] = config["tool"]["setuptools"]["package-dir"]
    for package, folder in mapping.items():
        parts = package.split(".")
        if len(parts) != 2:  # subpackages come with their top package's folder
            continue
        link = into.joinpath(*parts)
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(ROOT / folder, target_is_directory=True)
    for module in (ROOT / mapping["streamfn"]).glob("*.py"):
        (into / "streamfn" / module.name).symlink_to(module)
    return into


def hot_path_extensions() -> list[Any]:
    """mypyc's extension modules for the hot path, or none when not opted in."""
    if os.environ.get(OPT_IN) != "1":
        return []
    if any(arg in ("egg_info", "dist_info") for arg in sys.argv[1:]):
        return []  # the metadata step: mypy may not be installed yet (setup_requires)
    if "editable_wheel" in sys.argv[1:]:
        raise SystemExit(
            f"{OPT_IN}=1 builds a wheel, not an editable install: compiled modules would "
            "not follow later edits of their sources. Build with `pip install .` or "
            f"`pip wheel .`, or drop {OPT_IN} for an editable install."
        )
    try:
        from mypyc.build import mypycify
    except ImportError:
        raise SystemExit(
            f"{OPT_IN}=1 compiles with mypyc, which ships with mypy, and mypy is not "
            f"installed here: `pip install '{MYPYC}'` (a build with isolation installs it "
            "by itself), or drop the variable for a pure build."
        ) from None
    for stale in (*ROOT.glob("build/lib.*"), *ROOT.glob("build/temp.*")):
        shutil.rmtree(stale)  # a module compiled before but no longer listed must not ship
    config = _config()
    tree = _package_tree(config, ROOT / "build" / "mypyc-tree")
    checkout = {f: f.relative_to(ROOT) for f in compiled_files(config)}
    sources = [str(tree / "streamfn" / rel) for rel in checkout.values()]
    old = os.getcwd()
    os.chdir(tree)  # mypy names modules from the folder it runs in (explicit package bases)
    try:
        return list(
            mypycify(
                ["--config-file=", "--strict", "--explicit-package-bases", *sources],
                opt_level="3",
                group_name=GROUP,
                target_dir=str(ROOT / "build" / "mypyc-c"),
            )
        )
    finally:
        os.chdir(old)


class BuildHotPath(build_ext):
    """build_ext that falls back to the pure modules when there is no working C
    compiler, saying so: the same files are then imported as Python."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as error:  # CCompilerError, DistutilsExecError, PlatformError...
            for extension in self.extensions:  # none half-built ships: all pure, or none
                Path(self.get_ext_fullpath(extension.name)).unlink(missing_ok=True)
            self.warn(
                f"compiling the hot path failed ({type(error).__name__}: {error}); "
                "installing it as pure Python (the same modules, slower); "
                "`streamfn --version` will say `pure Python`"
            )
            self.extensions = []


if __name__ == "__main__":  # how setuptools runs it; tests import the list above
    setup(
        ext_modules=hot_path_extensions(),
        cmdclass={"build_ext": BuildHotPath},
        setup_requires=[MYPYC] if os.environ.get(OPT_IN) == "1" else [],
    )
