"""The public fuzzing strategies (`streamfn.fuzz`) are themselves checked here.

The round trip is the heart of it: for every wire format, a drawn stream
written by our encoder and read by our decoder comes back the same, under
any chunking. That checks each decoder against an encoder and each encoder
against a decoder; the openai SDK's own event types check the Responses
encoder's frames from outside.
"""

from __future__ import annotations

import asyncio
import logging
import re
import subprocess
import sys
import textwrap
import typing
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streamfn.core import Context, Model, Options, accumulate, check_protocol, replay
from streamfn.core._events import Done, Error, ToolCallDelta
from streamfn.fuzz import (
    FAULT_GROUPS,
    FAULTS,
    WIRE_FORMATS,
    FakeProvider,
    Transcript,
    chunkings,
    event_streams,
    faults,
    mutations,
    same_stream,
    split_frames,
    transcripts,
)
from streamfn.io_asyncio import stream

APIS = sorted(WIRE_FORMATS)
# Each example draws a stream and a chunking: keep the per-format count modest.
ROUND_TRIP = settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))


@given(event_streams())
def test_every_drawn_stream_obeys_the_protocol(events: list) -> None:
    check_protocol(events)
    message = accumulate(events)
    assert isinstance(events[-1], (Done, Error))
    if isinstance(events[-1], Done):
        for call in message.tool_calls:
            assert call.parse_error is None  # arguments are whole JSON objects


@given(
    event_streams(
        tool_calls=True,
        text=False,
        thinking=False,
        redacted_thinking=False,
        whole_tool_arguments=True,
    )
)
def test_whole_tool_arguments_arrive_as_one_delta(events: list) -> None:
    per_call: dict[int, int] = {}
    for e in events:
        if isinstance(e, ToolCallDelta):
            per_call[e.index] = per_call.get(e.index, 0) + 1
    assert all(n == 1 for n in per_call.values())


@pytest.mark.parametrize("api", APIS)
def test_round_trip_under_any_chunking(api: str) -> None:
    @ROUND_TRIP
    @given(transcripts(api), st.data())
    def check(t: Transcript, data: st.DataObject) -> None:
        chunks = data.draw(chunkings(t.body))
        assert b"".join(chunks) == t.body
        got = replay(t.api, chunks, provider=t.provider, headers=t.headers)
        check_protocol(got)
        assert same_stream(t.api, got, t.events), (got, t.events)

    check()


@pytest.mark.parametrize("api", APIS)
def test_mutated_transcripts_end_in_one_terminal_event(api: str) -> None:
    logging.getLogger("streamfn").setLevel(logging.ERROR)  # mutated bodies warn by design

    @ROUND_TRIP
    @given(transcripts(api), st.data())
    def check(t: Transcript, data: st.DataObject) -> None:
        body = data.draw(mutations(t.body, oversized_line_bytes=64))
        got = replay(t.api, data.draw(chunkings(body)), headers=t.headers)
        check_protocol(got)
        assert replay(t.api, body, headers=t.headers) == got

    try:
        check()
    finally:
        logging.getLogger("streamfn").setLevel(logging.NOTSET)


@given(transcripts())
def test_frames_join_back_into_the_body(t: Transcript) -> None:
    assert b"".join(split_frames(t.body)) == t.body


def test_the_responses_encoder_writes_events_the_openai_sdk_accepts() -> None:
    """Every frame our Responses encoder writes validates as the SDK's own event type
    (the member of its ``ResponseStreamEvent`` union whose ``type`` it names)."""
    responses = pytest.importorskip("openai.types.responses")
    by_type = {
        typing.get_args(member.model_fields["type"].annotation)[0]: member
        for member in typing.get_args(typing.get_args(responses.ResponseStreamEvent)[0])
    }

    @ROUND_TRIP
    @given(transcripts("openai-responses", opaque=None))
    def check(t: Transcript) -> None:
        for frame in split_frames(t.body):
            obj = msgspec.json.decode(frame.split(b"\ndata: ", 1)[1])
            by_type[obj["type"]].model_validate(obj)

    check()


def test_unknown_wire_format_is_named() -> None:
    with pytest.raises(ValueError, match="known: agui, anthropic"):
        transcripts("carrier-pigeon")


def test_fault_groups_name_every_fault_the_fake_provider_knows() -> None:
    grouped = {f for names in FAULT_GROUPS.values() for f in names}
    assert grouped <= set(FAULTS)
    # the one left out needs a chat-completions path and a Responses body to mean anything
    assert set(FAULTS) - grouped == {"responses-only"}
    with pytest.raises(ValueError, match="groups: ok, status"):
        faults("nonsense")


@ROUND_TRIP
@given(st.data())
def test_fake_provider_serves_a_transcript_with_a_drawn_fault(data: st.DataObject) -> None:
    """The guide's loop in small: a transcript behind a fault, read by a real shell."""
    t = data.draw(transcripts("openai-chat"))
    fault = data.draw(faults("ok", "drop"))
    with FakeProvider() as fake:
        url = fake.serve(t.body, t.content_type, fault=fault)
        model = Model(id="m", provider="openai", api="openai-chat", base_url=url)

        async def run() -> list[Any]:
            options = Options(api_key="k", max_attempts=1, first_byte_timeout=2, idle_timeout=2)
            async with stream(model, Context.of("hi"), options) as events:
                return [e async for e in events]

        got = asyncio.run(run())
    check_protocol(got)
    if fault in FAULT_GROUPS["ok"]:
        assert same_stream("openai-chat", got, t.events)
    else:  # a cut stream is never reported as success
        assert isinstance(got[-1], Error) or got == replay("openai-chat", t.body, headers=t.headers)


def test_the_fixture_is_registered_by_the_plugin(fake_provider: FakeProvider) -> None:
    assert fake_provider.url.startswith("http://127.0.0.1:")


@settings(max_examples=8, deadline=None)  # Hypothesis' health checks on, as a user's are
@given(transcripts("openai-chat"), faults("ok", "drop"))
def test_the_shared_fixture_serves_a_given_test(
    shared_fake_provider: FakeProvider, t: Transcript, fault: str
) -> None:
    """``@given`` with the plugin's session fixture: no health check trips, and each
    example's ``serve()`` URL answers with that example's body or fault."""
    from streamfn.io_sync import stream as blocking_stream

    url = shared_fake_provider.serve(t.body, t.content_type, fault=fault)
    model = Model(id="m", provider="openai", api="openai-chat", base_url=url)
    options = Options(api_key="k", max_attempts=1, first_byte_timeout=2, idle_timeout=2)
    with blocking_stream(model, Context.of("hi"), options) as events:
        got = list(events)
    if fault in FAULT_GROUPS["ok"]:
        assert same_stream("openai-chat", got, t.events)
    else:
        assert isinstance(got[-1], Error) or got == replay("openai-chat", t.body, headers=t.headers)


def test_the_plugins_examples_run_under_pytest(tmp_path: Path) -> None:
    """The plugin's docstring examples, as a user's test file: the names they import
    exist, and the ``@given`` one passes Hypothesis' default health checks."""
    from streamfn.fuzz import _pytest_plugin

    doc = _pytest_plugin.__doc__ or ""
    blocks = re.findall(r"\n\n((?:    .*\n|\n)+)", doc)
    examples = [textwrap.dedent(b) for b in blocks if "def test_" in b]
    assert len(examples) == 2, blocks
    given_example = examples[1].replace("...", "assert url.startswith('http://127.0.0.1:')")
    program = "\n".join([examples[0], "from hypothesis import settings", given_example])
    program = program.replace("@given(", "@settings(max_examples=5, deadline=None)\n@given(")
    (tmp_path / "test_user.py").write_text(program, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "2 passed" in done.stdout, done.stdout[-2000:]


def test_fake_provider_rejects_an_unknown_fault() -> None:
    with FakeProvider() as fake, pytest.raises(ValueError, match="unknown fault"):
        fake.serve(b"", fault="meteor")
