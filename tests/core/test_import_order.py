"""Every module imports as the first one a program imports.

A package face that re-exports its modules and a module that imports another
package's helpers can make a cycle that only shows when one particular module
is the first a program imports (as the plain install's command line found).
This imports each module of streamfn as the first one, in one fresh
interpreter, forgetting every streamfn module between two imports.
"""

from __future__ import annotations

import json
import subprocess
import sys

PROBE = r"""
import importlib, json, pkgutil, sys

TOPS = ["core", "client", "io_common", "io_trio", "io_asyncio", "io_sync", "asgi", "local", "cli", "fuzz", "ledger"]

def modules():
    found = []
    for top in TOPS:
        package = importlib.import_module(f"streamfn.{top}")
        found.append(package.__name__)
        for info in pkgutil.walk_packages(package.__path__, prefix=package.__name__ + "."):
            if not info.name.endswith("__main__"):
                found.append(info.name)
    return found

names = modules()
failed = {}
for name in names:
    for loaded in [m for m in sys.modules if m == "streamfn" or m.startswith("streamfn.")]:
        del sys.modules[loaded]
    try:
        importlib.import_module(name)
    except ImportError as exc:
        missing = getattr(exc, "name", None) or ""
        if missing and not missing.startswith("streamfn"):
            continue  # an extra that is not installed here
        failed[name] = repr(exc)
    except Exception as exc:  # a half-initialised module's AttributeError, and the like
        failed[name] = repr(exc)
print(json.dumps({"count": len(names), "failed": failed}))
"""


def test_every_module_imports_as_the_first_one() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["count"] > 200  # the walk found the package's modules
    assert report["failed"] == {}
