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

from typing import TYPE_CHECKING

from streamfn._lazy_face import lazy_face as _lazy_face

from ._fake_provider import FAULTS, FakeProvider

if TYPE_CHECKING:
    from ._bytes import chunkings, mutations, split_at, split_frames
    from ._fault_names import FAULT_GROUPS, faults
    from ._streams import StreamShape, event_streams, json_objects
    from ._wire import WIRE_FORMATS, Transcript, WireFormat, encode_body, same_stream, transcripts

#: public name -> the submodule that defines it (imported on first use: hypothesis)
_LAZY = {
    "chunkings": "._bytes",
    "mutations": "._bytes",
    "split_at": "._bytes",
    "split_frames": "._bytes",
    "FAULT_GROUPS": "._fault_names",
    "faults": "._fault_names",
    "StreamShape": "._streams",
    "event_streams": "._streams",
    "json_objects": "._streams",
    "WIRE_FORMATS": "._wire",
    "Transcript": "._wire",
    "WireFormat": "._wire",
    "encode_body": "._wire",
    "same_stream": "._wire",
    "transcripts": "._wire",
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


__getattr__, __dir__ = _lazy_face(__name__, _LAZY)
