"""Web-search sources appended for clients whose format has no field for them (off by default)."""

from __future__ import annotations

import json

import openai
import pytest
from corpus_support import CORPUS, corpus_dir
from loopback_server import KEY, Server

from streamfn.asgi import App, ServerConfig
from streamfn.core import (
    Done,
    Error,
    Event,
    OpaqueBlock,
    Start,
    TextDelta,
    TextEnd,
    TextStart,
    accumulate,
    check_protocol,
    replay,
)
from streamfn.core._messages import TextContent
from streamfn.core.serve._grounding import append_sources
from streamfn.fuzz._events_backend import EventsBackend

# every test here runs on both shells (tests/serve/conftest.py)
pytestmark = pytest.mark.usefixtures("shell")

SEARCHED: list[Event] = [
    Start(model="searcher"),
    OpaqueBlock(
        0,
        "anthropic",
        "server_tool_use",
        json.dumps(
            {
                "type": "server_tool_use",
                "id": "s1",
                "name": "web_search",
                "input": {"query": "SF weather"},
            }
        ),
    ),
    OpaqueBlock(
        1,
        "anthropic",
        "web_search_tool_result",
        json.dumps(
            {
                "type": "web_search_tool_result",
                "tool_use_id": "s1",
                "content": [
                    {
                        "type": "web_search_result",
                        "title": "Forecast",
                        "url": "https://w.example/sf",
                    },
                    {
                        "type": "web_search_result",
                        "title": "Forecast",
                        "url": "https://w.example/sf",
                    },
                    {"type": "web_search_result", "title": "", "url": "https://other.example"},
                ],
            }
        ),
    ),
    TextStart(2),
    TextDelta(2, "Sunny."),
    TextEnd(2),
    Done(),
]
SOURCES = (
    "\n\n---\n**Searched:** SF weather\n\n**Sources:**\n"
    "[1] [Forecast](https://w.example/sf)\n[2] [https://other.example](https://other.example)"
)


def test_a_search_adds_one_last_text_block_with_queries_and_distinct_sources() -> None:
    events = append_sources(SEARCHED)
    check_protocol(events)
    assert events[-4:] == [TextStart(3), TextDelta(3, SOURCES), TextEnd(3), Done()]


def test_a_real_anthropic_web_search_lists_every_query_and_page() -> None:
    path = CORPUS / "anthropic" / "thinking-web-search.sse"
    corpus_dir()
    recorded = replay(
        "anthropic", path.read_bytes(), headers=[("content-type", "text/event-stream")]
    )
    events = append_sources(recorded)
    check_protocol(events)
    last = accumulate(events).content[-1]
    assert isinstance(last, TextContent)
    assert "San Francisco weather today; San Francisco weather September 16 2025" in last.text
    assert (
        "(https://www.accuweather.com/en/us/san-francisco/94103/weather-forecast/347629)"
        in last.text
    )
    assert events[:-4] == recorded[:-1]  # everything else untouched


def test_no_search_or_a_failed_stream_passes_through_unchanged() -> None:
    plain: list[Event] = [Start(), TextStart(0), TextDelta(0, "hi"), TextEnd(0), Done()]
    assert append_sources(plain) == plain
    failed = [*SEARCHED[:3], Error.network("gone")]
    assert append_sources(failed) == failed


@pytest.mark.parametrize("on", [False, True])
def test_the_server_appends_them_for_openai_clients_only_when_configured(on: bool) -> None:
    backend = EventsBackend({"searcher": SEARCHED})
    with (
        Server(App(backend, ServerConfig(api_key=KEY, append_sources=on))) as server,
        openai.OpenAI(base_url=server.url + "/v1", api_key=KEY, max_retries=0) as client,
    ):
        whole = client.chat.completions.create(
            model="searcher", messages=[{"role": "user", "content": "weather?"}]
        )
        streamed = "".join(
            chunk.choices[0].delta.content or ""
            for chunk in client.chat.completions.create(
                model="searcher", messages=[{"role": "user", "content": "weather?"}], stream=True
            )
            if chunk.choices
        )
    expected = "Sunny." + (SOURCES if on else "")
    assert whole.choices[0].message.content == expected
    assert streamed == expected
