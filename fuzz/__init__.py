"""Fuzz your own code with provider transcripts: hypothesis strategies over streamfn.

- `event_streams` draws valid event streams (text, thinking with signatures,
  parallel tool calls with arguments split anywhere, usage, every stop reason
  and error kind), narrowed by the keywords of `StreamShape`.
- `transcripts` draws the wire bytes a provider would send for such a stream,
  for every wire format: ``replay(t.api, t.body)`` gives the stream back
  (`same_stream`).
- `chunkings` and `mutations` draw how a body arrives, and how it arrives broken.

Needs hypothesis (``pip install 'streamfn[fuzz]'``). The long-running targets
of the project itself are ``python -m streamfn.fuzz.<target>``.
"""

from __future__ import annotations

from .bytes import chunkings, mutations, split_at, split_frames
from .streams import StreamShape, event_streams, json_objects
from .wire import WIRE_FORMATS, Transcript, WireFormat, encode_body, same_stream, transcripts

__all__ = [
    "WIRE_FORMATS",
    "StreamShape",
    "Transcript",
    "WireFormat",
    "chunkings",
    "encode_body",
    "event_streams",
    "json_objects",
    "mutations",
    "same_stream",
    "split_at",
    "split_frames",
    "transcripts",
]
