"""Fuzz every provider state machine with mutated real bodies.

Seeds are the hand-made transcripts in ``tests/transcripts/<api>/`` and, when
``../shared/corpus`` is beside the repository, every real recording in it.
Each example picks a seed, mutates it (bit flips, byte insertions and
deletions, truncation, duplicated or dropped ranges), chunks it at random
and replays it through its wire format. Invariants:

- no exception escapes ``replay``;
- the events satisfy the protocol (`check_protocol`): one Start, exactly one
  terminal event, last, every block closed before Done, indices in order;
- a different chunking of the same bytes gives the same events.

Run (from the repository root)::

    FUZZ_EXAMPLES=2000 .venv/bin/python -m streamfn.fuzz.fuzz_providers            # a smoke run
    FUZZ_SECONDS=3600 FUZZ_EXAMPLES=20000 .venv/bin/python -m streamfn.fuzz.fuzz_providers  # an hour
"""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from streamfn.core import check_protocol, replay
from streamfn.core.call import API_MODULES
from streamfn.fuzz import chunkings, harness, mutations, same_stream, transcripts

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus"
_API_OF_PROTOCOL = {"bedrock-eventstream": "bedrock"}


def seeds() -> list[tuple[str, str | None, bytes]]:
    """(api, provider, body) for every recorded body we can find."""
    found: list[tuple[str, str | None, bytes]] = []
    for directory in sorted((ROOT / "tests" / "transcripts").iterdir()):
        api = directory.name  # transcripts/<wire api>/
        if api not in API_MODULES:
            continue
        for path in sorted(directory.iterdir()):
            if path.is_file():
                found.append((api, None, path.read_bytes()))
    index = CORPUS / "index.json"
    if index.exists():
        for entry in json.loads(index.read_text()):
            api = _API_OF_PROTOCOL.get(entry["protocol"], entry["protocol"])
            for name in entry["files"]:
                if name.endswith((".sse", ".ndjson", ".bin")):
                    found.append((api, entry["provider"], (CORPUS / name).read_bytes()))
    return found


SEEDS = seeds()


@given(st.data())
def fuzz_any_provider(data: st.DataObject) -> None:
    index = data.draw(st.integers(0, len(SEEDS) - 1))
    api, provider, seed = SEEDS[index]
    body = data.draw(mutations(seed))
    whole = replay(api, body, provider=provider)
    check_protocol(whole)
    assert replay(api, data.draw(chunkings(body)), provider=provider) == whole


@given(st.data())
def fuzz_transcripts_round_trip(data: st.DataObject) -> None:
    """Drawn streams, written by each format's encoder, read back the same in any chunking."""
    t = data.draw(transcripts())
    got = replay(t.api, data.draw(chunkings(t.body)), provider=t.provider, headers=t.headers)
    check_protocol(got)
    assert same_stream(t.api, got, t.events), (got, t.events)


def main() -> None:
    examples = int(os.environ.get("FUZZ_EXAMPLES", "100000"))
    logging.getLogger("streamfn").setLevel(logging.ERROR)  # mutated bodies warn by design
    print(f"{len(SEEDS)} seed bodies; up to {examples} examples per batch", file=sys.stderr)

    database = None if os.environ.get("FUZZ_NO_DB") else settings.default.database

    def one_round(n: int) -> None:
        harness.run_given(fuzz_any_provider, n, database=database)
        harness.run_given(fuzz_transcripts_round_trip, n, database=database)

    harness.run_rounds("fuzz_providers", one_round)


if __name__ == "__main__":
    main()
