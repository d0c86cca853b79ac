"""Citations as data, proven on the recordings that carry them.

Every corpus recording with OpenAI ``url_citation`` annotations, Anthropic
``citations_delta`` or Gemini ``groundingMetadata`` is decoded whole, one
byte at a time and in odd sizes: the citations on the final message are the
same each time, valid under the event grammar, and match what the recording
itself says (read here with plain ``json``, not our decoders). Then each
encoder writes them back out: the frames validate against the official SDK
types (anthropic, openai, google-genai) and decode back to the same
citations, in the formats that can express them.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from chunking import by_sizes, bytewise
from corpus_support import CORPUS, body, corpus_entries, require_corpus

from streamfn.core import (
    AssistantMessage,
    Done,
    Event,
    Start,
    TextContent,
    TextDelta,
    TextEnd,
    TextStart,
    replay,
)
from streamfn.core._accumulate import accumulate, check_protocol
from streamfn.core.content._citations import Citation
from streamfn.core.dialects._openai_citations import openai_citation
from streamfn.core.dialects.anthropic import AnthropicEncoder, anthropic_message_body
from streamfn.core.dialects.gemini import GeminiEncoder
from streamfn.core.dialects.gemini._citations import gemini_citations
from streamfn.core.dialects.openai_chat import OpenAIChatEncoder, openai_completion_body
from streamfn.core.dialects.openai_responses import ResponsesEncoder

#: what in a recording says it carries citations, by wire format
MARKERS = {
    "anthropic": b'"citations_delta"',
    "openai-responses": b'"url_citation"',
    "openai-chat": b'"url_citation"',
    "gemini": b'"groundingSupports"',
}


def _cited_entries() -> list[Any]:
    params = []
    for param in corpus_entries(*MARKERS):
        entry = param.values[0]
        if entry is None:
            return [param]
        if MARKERS[entry["protocol"]] in (CORPUS / entry["file"]).read_bytes():
            params.append(param)
    return params or [pytest.param(None, id="no-cited-recording")]


CITED = _cited_entries()


def _data(raw: bytes) -> list[Any]:
    """Every SSE ``data:`` payload of a recording, as JSON (CRLF or LF framing)."""
    out = []
    for line in raw.replace(b"\r\n", b"\n").split(b"\n"):
        if line.startswith(b"data:") and line[5:].strip() not in (b"", b"[DONE]"):
            out.append(json.loads(line[5:]))
    return out


def _citations(message: AssistantMessage) -> list[Citation]:
    return [c for b in message.content if isinstance(b, TextContent) for c in b.citations]


def _recorded(api: str, raw: bytes) -> list[tuple[str, Any]]:
    """(url, detail) per citation, straight from the recording."""
    events = _data(raw)
    if api == "anthropic":
        return [
            (e["delta"]["citation"]["url"], e["delta"]["citation"]["cited_text"])
            for e in events
            if e.get("type") == "content_block_delta" and e["delta"]["type"] == "citations_delta"
        ]
    if api == "openai-responses":
        done = [e for e in events if e.get("type") == "response.output_item.done"]
        return [
            (a["url"], (a["start_index"], a["end_index"]))
            for e in done
            if e["item"]["type"] == "message"
            for part in e["item"]["content"]
            for a in part.get("annotations", [])
        ]
    assert api == "gemini"
    metadata = [
        c["groundingMetadata"]
        for e in events
        for c in e.get("candidates", [])
        if c.get("groundingMetadata")
    ][-1]
    chunks = metadata["groundingChunks"]
    return [
        (chunks[i]["web"]["uri"], s["segment"]["text"])
        for s in metadata["groundingSupports"]
        for i in s["groundingChunkIndices"]
    ]


def _ours(api: str, citations: list[Citation]) -> list[tuple[str, Any]]:
    if api == "openai-responses":
        return [(c.url, (c.start, c.end)) for c in citations]
    return [(c.url, c.cited_text) for c in citations if c.cited_text is not None]


@pytest.mark.parametrize("entry", CITED)
def test_recorded_citations_reach_the_message_under_any_chunking(
    entry: dict[str, Any] | None,
) -> None:
    entry = require_corpus(entry)
    api, raw = entry["protocol"], body(entry)
    provider = entry.get("provider") or api
    seen = []
    for chunks in ([raw], bytewise(raw), by_sizes(raw, [1, 7, 250, 4096])):
        events = replay(api, chunks, provider=provider)
        check_protocol(events)
        message = accumulate(events)
        assert message.error_message is None, message.error_message
        seen.append(_citations(message))
    assert seen[0], "no citation reached the message"
    assert seen[0] == seen[1] == seen[2]
    assert _ours(api, seen[0]) == _recorded(api, raw)


# -- encoders: out again, in every format that has a place for them ------------------------


def _cited_events(entry: dict[str, Any]) -> list[Event]:
    api = entry["protocol"]
    return replay(api, body(entry), provider=entry.get("provider") or api)


def _frames(raw: bytes) -> list[Any]:
    return _data(raw)


def _same_citations(api: str, original: list[Citation], back: list[Citation]) -> None:
    if api == "openai-chat" or api == "openai-responses":
        keep = [c for c in original if c.kind == "url_citation"]
        assert [(c.url, c.start, c.end) for c in back] == [(c.url, c.start, c.end) for c in keep]
    else:
        assert back == original


@pytest.mark.parametrize("entry", CITED)
def test_the_anthropic_encoder_streams_anthropic_citations_back(
    entry: dict[str, Any] | None,
) -> None:
    from anthropic.types import Message, RawMessageStreamEvent
    from pydantic import TypeAdapter

    entry = require_corpus(entry)
    events = _cited_events(entry)
    original = _citations(accumulate(events))
    encoder = AnthropicEncoder(message_id="msg_1", model="m")
    raw = b"".join(encoder.encode(e) for e in events)
    adapter: TypeAdapter[Any] = TypeAdapter(RawMessageStreamEvent)
    for frame in _frames(raw):
        adapter.validate_python(frame)
    back = _citations(accumulate(replay("anthropic", raw)))
    expressible = [c for c in original if c.encrypted_index is not None]
    assert back == expressible
    whole = anthropic_message_body(accumulate(events), message_id="msg_1", model="m")
    Message.model_validate(whole)
    assert sum(len(b.get("citations", [])) for b in whole["content"]) == len(expressible)


@pytest.mark.parametrize("entry", CITED)
def test_the_openai_encoders_send_url_citations(entry: dict[str, Any] | None) -> None:
    from openai.types.chat import ChatCompletion
    from openai.types.responses import ResponseStreamEvent
    from pydantic import TypeAdapter

    entry = require_corpus(entry)
    events = _cited_events(entry)
    message = accumulate(events)
    original = [c for c in _citations(message) if c.url is not None]

    responses = ResponsesEncoder(response_id="resp_1", model="m")
    raw = b"".join(responses.encode(e) for e in events)
    adapter: TypeAdapter[Any] = TypeAdapter(ResponseStreamEvent)
    added = 0
    for frame in _frames(raw):
        item = frame.get("item") or {}
        if frame["type"].startswith("response.output_text") or item.get("type") == "message":
            adapter.validate_python(frame)  # (opaque items from other providers are as they were)
        added += frame["type"] == "response.output_text.annotation.added"
    assert added == len(original)
    back = _citations(accumulate(replay("openai-responses", raw)))
    assert [c.url for c in back] == [c.url for c in original]
    if entry["protocol"] == "openai-responses":
        _same_citations("openai-responses", original, back)

    chat = OpenAIChatEncoder(response_id="chatcmpl-1", model="m", created=0)
    back = _citations(accumulate(replay("openai-chat", b"".join(chat.encode(e) for e in events))))
    assert [c.url for c in back] == [c.url for c in original]
    whole = openai_completion_body(message, response_id="chatcmpl-1", model="m", created=0)
    parsed = ChatCompletion.model_validate(whole)
    annotations = parsed.choices[0].message.annotations or []
    assert [a.url_citation.url for a in annotations] == [c.url for c in original]
    text = parsed.choices[0].message.content or ""
    for annotation, citation in zip(annotations, original, strict=True):
        span = annotation.url_citation
        assert 0 <= span.start_index <= span.end_index <= len(text)
        if citation.kind == "url_citation" and citation.end:
            assert (span.start_index, span.end_index) == (citation.start, citation.end)


@pytest.mark.parametrize("entry", CITED)
def test_the_gemini_encoder_sends_grounding_metadata(entry: dict[str, Any] | None) -> None:
    from google.genai import types as genai

    entry = require_corpus(entry)
    events = _cited_events(entry)
    original = [c for c in _citations(accumulate(events)) if c.url is not None]
    encoder = GeminiEncoder(response_id="r1", model="m")
    raw = b"".join(encoder.encode(e) for e in events)
    for frame in _frames(raw):
        genai.GenerateContentResponse.model_validate(frame)
    back = _citations(accumulate(replay("gemini", raw)))
    assert {c.url for c in back} == {c.url for c in original}
    if entry["protocol"] == "gemini":
        assert back == original


# -- the readers, on the shapes the SDKs document ---------------------------------------------


def test_chat_completions_annotations_arrive_on_the_text_block() -> None:
    """Chat search models stream ``delta.annotations`` (the SDK's ``Annotation`` shape)."""
    from openai.types.chat.chat_completion_message import Annotation

    annotation = {
        "type": "url_citation",
        "url_citation": {
            "url": "https://a.example/x",
            "title": "A",
            "start_index": 3,
            "end_index": 9,
        },
    }
    Annotation.model_validate(annotation)
    chunk = {"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": "m"}
    lines = [
        {
            **chunk,
            "choices": [{"index": 0, "delta": {"role": "assistant", "content": "It is sunny."}}],
        },
        {**chunk, "choices": [{"index": 0, "delta": {"annotations": [annotation]}}]},
        {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    ]
    raw = (
        b"".join(b"data: " + json.dumps(x).encode() + b"\n\n" for x in lines) + b"data: [DONE]\n\n"
    )
    for chunks in ([raw], bytewise(raw)):
        message = accumulate(replay("openai-chat", chunks, provider="openai"))
        assert message.text == "It is sunny."
        assert _citations(message) == [
            Citation(kind="url_citation", url="https://a.example/x", title="A", start=3, end=9)
        ]


def test_unknown_citation_shapes_are_skipped_not_fatal() -> None:
    assert openai_citation({"type": "file_citation", "file_id": "f"}) is None
    assert openai_citation("nonsense") is None
    assert gemini_citations({"groundingSupports": [{"groundingChunkIndices": [5]}]}) == []


def test_citations_travel_on_text_end_through_the_native_format() -> None:
    from streamfn.core._events import decode_event_json, encode_event_json

    cited = (Citation(kind="url_citation", url="https://a.example", start=0, end=2),)
    events: list[Event] = [
        Start(),
        TextStart(0),
        TextDelta(0, "hi"),
        TextEnd(0, None, cited),
        Done(),
    ]
    assert [decode_event_json(encode_event_json(e)) for e in events] == events
    assert b"citations" not in encode_event_json(TextEnd(0))  # uncited ends are unchanged
    assert accumulate(events).content == [TextContent(text="hi", citations=list(cited))]


# -- end to end: a shell reading the recording from the loopback fake, and real SDK clients
# -- of `streamfn serve` in front of it ------------------------------------------------------


def _model_for(entry: dict[str, Any], base_url: str) -> Any:
    from streamfn.core import Model

    api = entry["protocol"]
    return Model(id="m", provider=entry.get("provider") or api, api=api, base_url=base_url)


@pytest.mark.parametrize("entry", CITED)
def test_a_shell_delivers_the_citations_whatever_the_transport_does(
    entry: dict[str, Any] | None,
) -> None:
    import asyncio

    from fake_provider import FakeProvider

    from streamfn.core import Options
    from streamfn.io_asyncio import Client

    entry = require_corpus(entry)
    wanted = _citations(accumulate(_cited_events(entry)))

    async def fetch(base_url: str) -> AssistantMessage:
        async with Client() as client:
            return await client.complete(
                _model_for(entry, base_url), _context(), Options(api_key="k", idle_timeout=10)
            )

    with FakeProvider() as fake:
        for fault in ("ok", "ok-close", "drip"):
            message = asyncio.run(fetch(fake.serve(body(entry), fault=fault)))
            assert _citations(message) == wanted, fault


def _context() -> Any:
    from streamfn.core import Context

    return Context.of("What is the weather?")


@pytest.mark.parametrize("entry", CITED)
def test_sdk_clients_of_the_gateway_see_the_citations(entry: dict[str, Any] | None) -> None:
    """The anthropic SDK folds our ``citations_delta`` into its message; the openai SDK
    parses our ``annotations``: each from whatever upstream made them."""
    import anthropic
    import openai
    from fake_provider import FakeProvider
    from loopback_server import KEY, Server

    from streamfn.asgi import ServerConfig
    from streamfn.asgi._backends import RouterBackend
    from streamfn.io_asyncio._backends import ProviderBackend
    from streamfn.io_asyncio._server import App

    entry = require_corpus(entry)
    wanted = [c for c in _citations(accumulate(_cited_events(entry))) if c.url is not None]
    with FakeProvider() as fake:
        model = _model_for(entry, fake.serve(body(entry)))
        keys = {f"{v}_API_KEY": "k" for v in ("ANTHROPIC", "OPENAI", "GEMINI")}
        backend = ProviderBackend(environ=keys, models=[model])
        with Server(App(RouterBackend(None, backend), ServerConfig(api_key=KEY))) as gateway:
            name = f"{model.provider}:{model.id}"
            with (
                anthropic.Anthropic(base_url=gateway.url, api_key=KEY, max_retries=0) as claude,
                claude.messages.stream(
                    model=name, max_tokens=50, messages=[{"role": "user", "content": "hi"}]
                ) as stream,
            ):
                final = stream.get_final_message()
            cited = [c for b in final.content if b.type == "text" for c in (b.citations or [])]
            sendable = [c for c in wanted if c.encrypted_index is not None]
            assert [c.url for c in cited] == [c.url for c in sendable]  # type: ignore[union-attr]
            with openai.OpenAI(base_url=gateway.url + "/v1", api_key=KEY, max_retries=0) as gpt:
                answer = gpt.chat.completions.create(
                    model=name, messages=[{"role": "user", "content": "hi"}]
                )
            annotations = answer.choices[0].message.annotations or []
            assert [a.url_citation.url for a in annotations] == [c.url for c in wanted]
