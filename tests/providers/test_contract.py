"""The contract every wire format keeps, over every recording we have.

Each hand-made transcript (tests/transcripts/<api>/) and each real recording
of ../shared/corpus, whatever its wire format, replays into one valid stream
(`check_protocol`: one `Start` first, blocks in order, exactly one terminal
event, last), and the bytes arriving in any pieces give the same events as
the bytes arriving whole. What a recording must fold into is provider
vocabulary, so that stays with each provider's tests (``test_corpus_conformance``).
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from corpus_support import CORPUS, corpus_entries

from streamfn.core import Context, Model, Options, check_protocol, replay
from streamfn.core._events import Event
from streamfn.core.providers import HTTPRequest, SSECall
from streamfn.core.wire._sse import ServerSentEvent
from streamfn.fuzz import split_at

TRANSCRIPTS = Path(__file__).resolve().parents[1] / "transcripts"
#: the corpus index's protocol names -> our wire formats
PROTOCOL_API = {"bedrock-eventstream": "bedrock"}
#: recordings up to this size are also replayed one byte at a time
BYTEWISE_MAX = 16_384


def _transcripts() -> list[Any]:
    return [
        pytest.param(api.name, None, path, id=f"{api.name}/{path.name}")
        for api in sorted(TRANSCRIPTS.iterdir())
        for path in sorted(api.iterdir())
    ]


def _corpus() -> list[Any]:
    params = []
    for param in corpus_entries():
        entry = param.values[0]
        if entry is None:
            continue
        if entry["file"].endswith(".chunks.txt"):
            continue  # unframed fixtures; their framed .sse copies are recordings too
        api = PROTOCOL_API.get(entry["protocol"], entry["protocol"])
        params.append(
            pytest.param(api, entry["provider"], CORPUS / entry["file"], id=entry["file"])
        )
    return params


RECORDINGS = _transcripts() + _corpus()


def run(api: str, provider: str | None, data: bytes | list[bytes]) -> list[Event]:
    return replay(api, data, provider=provider)


@pytest.mark.parametrize(("api", "provider", "path"), RECORDINGS)
def test_a_recording_replays_into_one_valid_stream(
    api: str, provider: str | None, path: Path
) -> None:
    check_protocol(run(api, provider, path.read_bytes()))


@pytest.mark.parametrize(("api", "provider", "path"), RECORDINGS)
def test_any_chunking_gives_the_same_events(api: str, provider: str | None, path: Path) -> None:
    data = path.read_bytes()
    whole = run(api, provider, data)
    rng = random.Random(path.name)
    cuts = sorted(rng.sample(range(1, len(data)), min(40, len(data) - 1)))
    assert run(api, provider, [p for p in split_at(data, cuts) if p]) == whole
    # byte by byte only where it is cheap: 7-byte pieces cut every event somewhere too
    for size in (1, 7, 4096) if len(data) <= BYTEWISE_MAX else (7, 4096):
        assert run(api, provider, [data[i : i + size] for i in range(0, len(data), size)]) == whole
    # a live stream: one read per event (the one-event step of the SSE providers)
    ends = [i + 2 for i in range(len(data)) if data.startswith(b"\n\n", i)]
    assert run(api, provider, [p for p in split_at(data, ends) if p]) == whole


class _NoPath(SSECall):
    """Writes neither of the two ways in."""


class _RawNoRun(SSECall):
    raw_data = True


class _OnEvent(SSECall):
    def on_event(self, event: ServerSentEvent) -> None:
        self.emit.text("t", event.data)


@pytest.mark.parametrize(("cls", "missing"), [(_NoPath, "on_event"), (_RawNoRun, "on_run")])
def test_an_sse_provider_without_its_one_path_is_refused_when_opened(
    cls: type[SSECall], missing: str
) -> None:
    """A provider writes one path (`on_event`, or `on_run` with ``raw_data``); a
    class that writes none fails when a call is opened, naming the method."""
    with pytest.raises(TypeError, match=f"must define {missing}"):
        cls(_MODEL, Context(), Options(api_key="k"), _REQUEST)
    assert _OnEvent(_MODEL, Context(), Options(api_key="k"), _REQUEST).receive_data(b"") == []


_MODEL = Model(id="m", provider="p", api="custom-sse", base_url="http://x")
_REQUEST = HTTPRequest(method="POST", url="http://x", headers=[], body=b"")
