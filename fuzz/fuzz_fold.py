"""Long-running fuzz of the fold and the partial-JSON parser.

Runs the fold's and the partial-JSON parser's properties (the kit's
`streamfn.fuzz._fold_properties` and `_json_properties`, which the test suite
runs with a few dozen examples) with many more examples, plus targets with wider
input than the test suite affords (any Unicode text as JSON, long event
sequences). What must hold:

- any event sequence: `Accumulator.add` raises nothing but `ProtocolViolation`,
  the live view never raises, `check_protocol` agrees on where it breaks;
- valid streams fold into the intended message, and the live view after each
  event equals the fold of that prefix;
- any text in any chunking: `PartialJSONParser` accepts exactly what
  ``msgspec.json.decode`` accepts and gives the same value; every prefix of
  valid JSON shows a value consistent with the final one.

Run::

    FUZZ_EXAMPLES=20000 .venv/bin/python -m streamfn.fuzz.fuzz_fold [target-name ...]
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

import msgspec
from hypothesis import given
from hypothesis import strategies as st

from streamfn.core.accumulate import Accumulator, ProtocolViolation
from streamfn.core.events import Event
from streamfn.core.partial_json import PartialJSONError, PartialJSONParser
from streamfn.fuzz import _fold_properties as fold
from streamfn.fuzz import _json_properties as pj
from streamfn.fuzz import harness


@given(st.lists(fold.any_event, max_size=200))
def long_random_event_sequences(events: list[Event]) -> None:
    acc = Accumulator()
    for event in [fold.START, *events]:
        try:
            acc.add(event)
        except ProtocolViolation:
            assert acc.violation is not None
            return
        acc.message  # noqa: B018 - reading must never raise


@given(st.text(), st.data())
def any_text_as_json(text: str, data: st.DataObject) -> None:
    chunks = data.draw(pj.text_chunkings(text))
    parser = PartialJSONParser()
    for chunk in chunks:
        parser.feed(chunk)  # never raises
        parser.value()
    try:
        ours: tuple[bool, object] = (True, parser.close())
    except PartialJSONError:
        ours = (False, None)
    try:
        theirs: tuple[bool, object] = (True, msgspec.json.decode(text))
    except msgspec.DecodeError:
        theirs = (False, None)
    assert ours == theirs, (text, ours, theirs)


TARGETS: dict[str, Callable[[], None]] = {
    "random-events": fold.any_event_sequence_raises_only_protocol_violation,
    "long-random-events": long_random_event_sequences,
    "valid-streams": fold.a_valid_stream_folds_into_the_intended_message,
    "live-view": fold.the_live_view_after_each_event_is_the_fold_of_that_prefix,
    "json-vs-msgspec": pj.any_chunking_gives_exactly_what_msgspec_gives,
    "json-prefixes": pj.every_prefix_is_consistent_with_the_final_value,
    "json-chunking": pj.best_effort_value_does_not_depend_on_chunking,
    "damaged-json": pj.accepts_and_rejects_exactly_what_msgspec_does,
    "any-text-json": any_text_as_json,
}


def main(names: list[str]) -> None:
    os.environ.setdefault("FUZZ_EXAMPLES", "2000")
    chosen = names or list(TARGETS)
    unknown = sorted(set(chosen) - set(TARGETS))
    if unknown:
        raise SystemExit(f"unknown targets {unknown}; choose from {sorted(TARGETS)}")

    def one_round(examples: int) -> None:
        for name in chosen:
            harness.run_given(TARGETS[name], examples, print_blob=True)

    harness.run_rounds("fuzz_fold " + " ".join(chosen), one_round)


if __name__ == "__main__":
    main(sys.argv[1:])
