"""Fuzz every provider state machine with mutated bodies.

Seeds are the recorded bodies in the directories named on the command line,
each either a tree of ``<wire api>/<file>`` bodies (a checkout's
``tests/transcripts``) or a corpus of recordings described by an
``index.json`` (its entries' ``protocol``, ``provider`` and ``files``). With
no directory, the seeds are transcripts the kit draws itself (`transcripts`:
every wire format, written by its encoder), so an installed
``streamfn[fuzz]`` runs this target with nothing beside it; the run says
which seeds it uses.

Each example picks a seed, mutates it (bit flips, byte insertions and
deletions, truncation, duplicated or dropped ranges and frames), chunks it at
random and replays it through its wire format. Invariants:

- no exception escapes ``replay``;
- the events satisfy the protocol (`check_protocol`): one Start, exactly one
  terminal event, last, every block closed before Done, indices in order;
- a different chunking of the same bytes gives the same events.

A second target draws streams, writes them with each format's encoder and
reads them back in any chunking.

Run::

    FUZZ_EXAMPLES=2000 python -m streamfn.fuzz.fuzz_providers            # a smoke run
    FUZZ_SECONDS=3600 FUZZ_EXAMPLES=20000 python -m streamfn.fuzz.fuzz_providers \\
        tests/transcripts path/to/corpus                                 # an hour
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from streamfn._extras import missing_extra as _missing_extra

try:  # the [fuzz] extra
    from hypothesis import given, settings
    from hypothesis import strategies as st
except ModuleNotFoundError as _missing:
    raise _missing_extra("python -m streamfn.fuzz.fuzz_providers", _missing, "fuzz") from None

from streamfn.core import check_protocol, replay
from streamfn.core._wire_formats import API_MODULES
from streamfn.fuzz import _harness as harness
from streamfn.fuzz import chunkings, mutations, same_stream, transcripts

__all__ = ["main"]  # a command (`python -m streamfn.fuzz.fuzz_providers`), not a library

#: corpus ``protocol`` names that differ from the wire api's name
_API_OF_PROTOCOL = {"bedrock-eventstream": "bedrock"}
_BODY_SUFFIXES = (".sse", ".ndjson", ".bin")


@dataclass(frozen=True)
class Seed:
    """One body to mutate, and how to replay it."""

    api: str
    provider: str | None
    body: bytes
    headers: tuple[tuple[str, str], ...] | None = None


def seeds_in(directory: Path) -> list[Seed]:
    """The bodies in a corpus (``index.json``) or a ``<wire api>/<file>`` tree."""
    if not directory.is_dir():
        raise SystemExit(f"seed directory {directory} does not exist (or is not a directory)")
    index = directory / "index.json"
    if index.exists():
        found = []
        for entry in json.loads(index.read_text()):
            api = _API_OF_PROTOCOL.get(entry["protocol"], entry["protocol"])
            for name in entry["files"]:
                if name.endswith(_BODY_SUFFIXES):
                    found.append(Seed(api, entry["provider"], (directory / name).read_bytes()))
        return found
    trees = [d for d in sorted(directory.iterdir()) if d.is_dir() and d.name in API_MODULES]
    if not trees:
        raise SystemExit(
            f"{directory} holds neither an index.json nor folders named by wire api "
            f"({', '.join(sorted(API_MODULES))})"
        )
    return [
        Seed(tree.name, None, path.read_bytes())
        for tree in trees
        for path in sorted(tree.iterdir())
        if path.is_file()
    ]


def _drawn_seeds() -> st.SearchStrategy[Seed]:
    return transcripts().map(lambda t: Seed(t.api, t.provider, t.body, tuple(t.headers)))


def any_provider(seeds: Iterable[Seed]) -> Callable[[], None]:
    """The mutation target over ``seeds`` (drawn transcripts when there are none)."""
    recorded = list(seeds)
    pick = st.sampled_from(recorded) if recorded else _drawn_seeds()

    @given(st.data())
    def fuzz_any_provider(data: st.DataObject) -> None:
        seed = data.draw(pick)
        body = data.draw(mutations(seed.body))
        whole = replay(seed.api, body, provider=seed.provider, headers=seed.headers)
        check_protocol(whole)
        again = replay(
            seed.api, data.draw(chunkings(body)), provider=seed.provider, headers=seed.headers
        )
        assert again == whole

    return fuzz_any_provider


@given(st.data())
def fuzz_transcripts_round_trip(data: st.DataObject) -> None:
    """Drawn streams, written by each format's encoder, read back the same in any chunking."""
    t = data.draw(transcripts())
    got = replay(t.api, data.draw(chunkings(t.body)), provider=t.provider, headers=t.headers)
    check_protocol(got)
    assert same_stream(t.api, got, t.events), (got, t.events)


def main(directories: list[str]) -> None:
    seeds = [seed for name in directories for seed in seeds_in(Path(name))]
    examples = int(os.environ.get("FUZZ_EXAMPLES", "100000"))
    logging.getLogger("streamfn").setLevel(logging.ERROR)  # mutated bodies warn by design
    if seeds:
        print(f"{len(seeds)} seed bodies from {', '.join(directories)}", file=sys.stderr)
    else:
        print(
            "no seed directories given: mutating drawn transcripts only "
            "(name recordings, e.g. a checkout's tests/transcripts, to seed from them)",
            file=sys.stderr,
        )
    print(f"up to {examples} examples per batch", file=sys.stderr)
    target = any_provider(seeds)
    database = None if os.environ.get("FUZZ_NO_DB") else settings().database

    def one_round(n: int) -> None:
        harness.run_given(target, n, database=database)
        harness.run_given(fuzz_transcripts_round_trip, n, database=database)

    harness.run_rounds("fuzz_providers", one_round)


if __name__ == "__main__":
    main(sys.argv[1:])
