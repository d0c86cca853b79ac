"""Fuzz your own code with provider transcripts: hypothesis strategies and a fake provider.

- `event_streams` draws valid event streams (text, thinking with signatures,
  parallel tool calls with arguments split anywhere, usage, every stop reason
  and error kind), narrowed by the keywords of `StreamShape`.
- `transcripts` draws the wire bytes a provider would send for such a stream,
  for every wire format: ``replay(t.api, t.body)`` gives the stream back
  (`same_stream`).
- `chunkings` and `mutations` draw how a body arrives, and how it arrives broken;
  `faults` what the HTTP around it does.
- `FakeProvider` serves any body with any fault on loopback (the pytest fixture
  ``fake_provider`` starts one per test).

The strategies need hypothesis (``pip install 'streamfn[fuzz]'``) and are
imported on first use, so `FakeProvider` and the pytest plugin work without
it. The project's long-running targets are ``python -m streamfn.fuzz.<target>``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .fake_provider import FAULTS, FakeProvider

if TYPE_CHECKING:
    from .bytes import chunkings, mutations, split_at, split_frames
    from .fault_names import FAULT_GROUPS, faults
    from .streams import StreamShape, event_streams, json_objects
    from .wire import WIRE_FORMATS, Transcript, WireFormat, encode_body, same_stream, transcripts

#: public name -> the submodule that defines it (imported on first use: hypothesis)
_LAZY = {
    "chunkings": "bytes",
    "mutations": "bytes",
    "split_at": "bytes",
    "split_frames": "bytes",
    "FAULT_GROUPS": "fault_names",
    "faults": "fault_names",
    "StreamShape": "streams",
    "event_streams": "streams",
    "json_objects": "streams",
    "WIRE_FORMATS": "wire",
    "Transcript": "wire",
    "WireFormat": "wire",
    "encode_body": "wire",
    "same_stream": "wire",
    "transcripts": "wire",
}

__all__ = [
    "FAULTS",
    "FAULT_GROUPS",
    "WIRE_FORMATS",
    "FakeProvider",
    "StreamShape",
    "Transcript",
    "WireFormat",
    "chunkings",
    "encode_body",
    "event_streams",
    "faults",
    "json_objects",
    "mutations",
    "same_stream",
    "split_at",
    "split_frames",
    "transcripts",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'streamfn.fuzz' has no attribute {name!r}")
    try:
        value = getattr(importlib.import_module(f".{module}", __name__), name)
    except ModuleNotFoundError as exc:
        if exc.name == "hypothesis":
            raise ModuleNotFoundError(
                f"streamfn.fuzz.{name} needs hypothesis: pip install 'streamfn[fuzz]' "
                "(from a checkout: pip install -e '.[fuzz]')",
                name="hypothesis",
            ) from exc
        raise
    globals()[name] = value
    return value
