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

from streamfn._extras import missing_extra as _missing_extra

try:  # the [fuzz] extra
    from hypothesis import given
    from hypothesis import strategies as st
except ModuleNotFoundError as _missing:
    raise _missing_extra("python -m streamfn.fuzz.fuzz_fold", _missing, "fuzz") from None

from streamfn.core import Accumulator, Event, ProtocolViolation
from streamfn.core.json._partial_json import PartialJSONError, PartialJSONParser
from streamfn.fuzz import _harness as harness
from streamfn.fuzz._fold_properties import (
    START,
    a_valid_stream_folds_into_the_intended_message,
    any_event,
    any_event_sequence_raises_only_protocol_violation,
    the_live_view_after_each_event_is_the_fold_of_that_prefix,
)
from streamfn.fuzz._json_properties import (
    accepts_and_rejects_exactly_what_msgspec_does,
    any_chunking_gives_exactly_what_msgspec_gives,
    best_effort_value_does_not_depend_on_chunking,
    every_prefix_is_consistent_with_the_final_value,
    msgspec_outcome,
    text_chunkings,
)

__all__ = ["main"]  # a command (`python -m streamfn.fuzz.fuzz_fold`), not a library


@given(st.lists(any_event, max_size=200))
def long_random_event_sequences(events: list[Event]) -> None:
    acc = Accumulator()
    for event in [START, *events]:
        try:
            acc.add(event)
        except ProtocolViolation:
            assert acc.violation is not None
            return
        acc.message  # noqa: B018 - reading must never raise


@given(st.text(), st.data())
def any_text_as_json(text: str, data: st.DataObject) -> None:
    chunks = data.draw(text_chunkings(text))
    parser = PartialJSONParser()
    for chunk in chunks:
        parser.feed(chunk)  # never raises
        parser.value()
    try:
        ours: tuple[bool, object] = (True, parser.close())
    except PartialJSONError:
        ours = (False, None)
    theirs = msgspec_outcome(text)
    assert ours == theirs, (text, ours, theirs)


TARGETS: dict[str, Callable[[], None]] = {
    "random-events": any_event_sequence_raises_only_protocol_violation,
    "long-random-events": long_random_event_sequences,
    "valid-streams": a_valid_stream_folds_into_the_intended_message,
    "live-view": the_live_view_after_each_event_is_the_fold_of_that_prefix,
    "json-vs-msgspec": any_chunking_gives_exactly_what_msgspec_gives,
    "json-prefixes": every_prefix_is_consistent_with_the_final_value,
    "json-chunking": best_effort_value_does_not_depend_on_chunking,
    "damaged-json": accepts_and_rejects_exactly_what_msgspec_does,
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
