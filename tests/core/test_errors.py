"""One exception tree: everything streamfn raises on purpose derives from `StreamfnError`.

The branches say whose fault it is; the old names still catch what they
caught (``except SSEError``), and what was a `ValueError` or a `KeyError`
still is one.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

from streamfn.core._errors import (
    CompletionError,
    DecodeError,
    EventStreamError,
    JSONArrayError,
    MissingCredentials,
    NDJSONError,
    PartialJSONError,
    ProtocolViolation,
    SSEError,
    StreamfnError,
    UnknownModel,
    UsageError,
)
from streamfn.core.wire import EventStreamDecoder, JSONArrayDecoder, NDJSONDecoder, SSEDecoder

PACKAGES = [
    "streamfn.core",
    "streamfn.io_trio",
    "streamfn.io_asyncio",
    "streamfn.asgi",
    "streamfn.local",
    "streamfn.fuzz",
]

#: exceptions outside the tree, each with its reason (an entry that no longer applies fails)
OUTSIDE: dict[str, str] = {
    "_Recursive": "private control flow of the schema inliner (a $ref cycle), never seen by a caller",
    "BudgetSpent": "private control flow of the schema checks (their step budget ran out), "
    "said as a mismatch, never seen by a caller",
    "NotJSON": "private control flow of the enum index (a member or value that is not JSON "
    "is compared one by one), never seen by a caller",
}


def _exception_classes() -> dict[str, type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for package in PACKAGES:
        root = importlib.import_module(package)
        names = [package] + [
            info.name
            for info in pkgutil.walk_packages(root.__path__, prefix=package + ".")
            if not info.name.endswith("__main__")
        ]
        for name in names:
            try:
                module = importlib.import_module(name)
            except ImportError:  # an optional extra that is not installed
                continue
            for cls_name, cls in vars(module).items():
                if (
                    inspect.isclass(cls)
                    and issubclass(cls, Exception)
                    and cls.__module__.startswith("streamfn.")
                ):
                    found[cls_name] = cls
    return found


def test_every_exception_of_ours_is_in_the_tree() -> None:
    classes = _exception_classes()
    outside = sorted(n for n, c in classes.items() if not issubclass(c, StreamfnError))
    assert outside == sorted(n for n in OUTSIDE if n in classes)
    assert set(OUTSIDE) - set(classes) == set(), "joined the tree: remove from OUTSIDE"


@pytest.mark.parametrize("cls", [SSEError, NDJSONError, EventStreamError, JSONArrayError])
def test_the_decoder_errors_are_one_branch(cls: type[DecodeError]) -> None:
    error = cls("too long", limit=True)
    assert isinstance(error, DecodeError) and isinstance(error, StreamfnError)
    assert (error.reason, error.limit, str(error)) == ("too long", True, "too long")


@pytest.mark.parametrize(
    ("decoder", "data", "cls"),
    [
        (SSEDecoder(max_line_bytes=8), b"data: " + b"x" * 20, SSEError),
        (NDJSONDecoder(max_line_bytes=8), b"x" * 20, NDJSONError),
        (EventStreamDecoder(), b"\x00" * 16, EventStreamError),
        (JSONArrayDecoder(), b'{"a": 1}', JSONArrayError),
    ],
)
def test_each_decoder_raises_its_own_name_of_the_one_error(
    decoder: SSEDecoder | NDJSONDecoder | EventStreamDecoder | JSONArrayDecoder,
    data: bytes,
    cls: type[DecodeError],
) -> None:
    with pytest.raises(DecodeError) as caught:
        decoder.feed(data)
        decoder.end()
    assert type(caught.value) is cls


def test_what_was_a_value_or_key_error_still_is() -> None:
    assert issubclass(PartialJSONError, ValueError)
    assert issubclass(UsageError, ValueError)
    assert issubclass(UnknownModel, KeyError) and issubclass(UnknownModel, UsageError)
    assert issubclass(MissingCredentials, UsageError)
    assert str(UnknownModel("no model 'x'")) == "no model 'x'"  # not KeyError's quoted repr
    for cls in (ProtocolViolation, CompletionError):
        assert issubclass(cls, StreamfnError) and not issubclass(cls, ValueError)
