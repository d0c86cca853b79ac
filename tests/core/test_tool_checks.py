"""Tool calls checked against their tools' schemas at their end, the known glitches
repaired and flagged, the rest handed to the caller's hook; never a cut call."""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Iterator
from typing import Any

import msgspec
import pytest
from fake_provider import FakeProvider
from scaling import assert_linear
from shell_runner import FAST, SHELLS, run

from streamfn.core import (
    Context,
    Done,
    Error,
    Model,
    Options,
    StopReason,
    TextDelta,
    TextStart,
    Tool,
    ToolCall,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    accumulate,
    check_protocol,
)
from streamfn.core._accumulate import WholeToolCalls
from streamfn.core._events import Event, Start, decode_event_json, encode_event_json
from streamfn.core.json._check_budget import CheckBudget
from streamfn.core.json._schema_check import SchemaMismatch, check_json
from streamfn.core.stages._tool_checks import MAX_CONCATENATED, ToolCallChecks, repair_arguments
from streamfn.fuzz._fake_bodies import sse

WEATHER = Tool(
    name="get_weather",
    parameters={
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "units": {"enum": ["c", "f"]},
        },
        "required": ["city"],
        "additionalProperties": False,
    },
)


@pytest.mark.parametrize(
    ("text", "repaired"),
    [
        ('{}{"city": "Paris"}', '{"city": "Paris"}'),
        ('{"city": "Paris"}{}', '{"city": "Paris"}'),
        ('{"city": "Paris"} {"city": "Paris"}', '{"city": "Paris"}'),
        ('{"city": "Paris"}</tool_call>', '{"city": "Paris"}'),
        ('  {"city": "Paris"}\n```', '{"city": "Paris"}'),
        ('{}{"city": "Paris"} done', '{"city": "Paris"}'),
    ],
)
def test_the_known_glitches_are_repaired(text: str, repaired: str) -> None:
    result = repair_arguments(text)
    assert result is not None and result[0] == repaired and result[1]


@pytest.mark.parametrize(
    "text",
    [
        '{"city": "Paris"}',  # nothing to repair
        "",
        '{"city": "Paris"}{"city": "Oslo"}',  # two different calls: not ours to choose
        '{"city": "Paris"}{"cit',  # more JSON, cut: never "repaired" into a smaller call
        '{"city": "Paris"} ["x"',
        '{"city": "Par',
        "[1, 2] tail",  # not an object
        "hello",
        '{"city": NaN}',  # not JSON, though Python's json module reads it
        '{"city": "Paris"}, {"city": "Oslo"}',  # a second call after a comma: not dropped
        "{}" * (MAX_CONCATENATED + 1),  # no glitch repeats that often
    ],
)
def test_what_is_not_a_known_glitch_is_left_alone(text: str) -> None:
    assert repair_arguments(text) is None


def test_repair_costs_one_pass_over_the_arguments_however_many_objects_they_hold() -> None:
    """An upstream (or a model in a loop) sending ``{}{}{}...`` as a call's arguments is
    checked on the server's event loop: the check must stay linear in the text."""

    def prepare(size: int) -> Any:
        text = "{}" * size + '{"city": "Paris"}'
        return lambda: repair_arguments(text)

    assert_linear(prepare, 1 << 15)


def call_events(name: str, *pieces: str, end: bool = True) -> list[Event]:
    out: list[Event] = [Start(), ToolCallStart(0, "call_1", name)]
    out += [ToolCallDelta(0, p) for p in pieces]
    if end:
        out += [ToolCallEnd(0), Done(stop_reason=StopReason.TOOL_USE)]
    else:
        out.append(Error.network("connection dropped"))
    return out


def checked(events: list[Event], **kwargs: Any) -> list[Event]:
    checks = ToolCallChecks([WEATHER], **kwargs)
    out = checks.feed(events) + checks.finish()
    check_protocol(out)
    return out


def test_a_valid_call_passes_unchanged() -> None:
    events = call_events("get_weather", '{"city": ', '"Paris"}')
    assert checked(events) == events


def test_schema_errors_ride_on_the_end_and_reach_the_folded_call() -> None:
    out = checked(call_events("get_weather", '{"units": "k", "x": 1}'))
    end = out[-2]
    assert isinstance(end, ToolCallEnd)
    assert {(e.path, e.message) for e in end.errors} == {
        ("", "the required property 'city' is missing"),
        ("/units", '"k" is not one of ["c","f"]'),
        ("", "the property 'x' is not allowed (additionalProperties)"),
    }
    call = accumulate(out).tool_calls[0]
    assert call.errors == list(end.errors) and call.arguments == {"units": "k", "x": 1}


def test_repairs_are_flagged_and_the_streamed_text_is_kept() -> None:
    out = checked(call_events(" get_weather\n", "{}", '{"city": "Paris"}'))
    end = out[-2]
    assert isinstance(end, ToolCallEnd)
    assert end.name == "get_weather" and end.arguments == '{"city": "Paris"}' and not end.errors
    assert len(end.repairs) == 2
    call = accumulate(out).tool_calls[0]
    assert call.name == "get_weather" and call.arguments == {"city": "Paris"}
    assert call.parse_error is None and call.streamed_arguments == '{}{"city": "Paris"}'
    assert call.repairs == list(end.repairs)


def test_unparsable_arguments_and_unknown_tools_are_errors() -> None:
    end = checked(call_events("get_weather", '{"city": "Paris", '))[-2]
    assert isinstance(end, ToolCallEnd) and "not valid JSON" in end.errors[0].message
    end = checked(call_events("get_wether", '{"city": "Paris"}'))[-2]
    assert isinstance(end, ToolCallEnd)
    assert end.errors == (
        SchemaMismatch("", "no tool named 'get_wether' was declared (declared: get_weather)"),
    )


@pytest.mark.parametrize(
    ("name", "arguments", "flagged"),
    [
        ("get_weather", {"city": "Oslo"}, []),  # a valid replacement passes clean
        # an invalid replacement is checked like the call it replaces: flagged, not valid
        ("get_weather", {"city": 5}, [("/city", "not of type string")]),
        ("get_wether", {"city": "Oslo"}, [("", "no tool named 'get_wether'")]),
    ],
)
def test_the_hook_sees_the_rest_and_its_replacement_is_checked(
    name: str, arguments: dict[str, Any], flagged: list[tuple[str, str]]
) -> None:
    seen: list[tuple[ToolCall, list[SchemaMismatch]]] = []

    def repair(call: ToolCall, errors: list[SchemaMismatch]) -> ToolCall | None:
        seen.append((call, errors))
        return msgspec.structs.replace(call, name=name, arguments=arguments)

    out = checked(call_events("get_wether", '{"town": "Oslo"}'), repair=repair)
    assert len(seen) == 1 and seen[0][0].arguments == {"town": "Oslo"} and seen[0][1]
    call = accumulate(out).tool_calls[0]
    assert call.name == name and call.arguments == arguments
    assert call.repairs == ["replaced by Options.repair_tool_call"]
    assert len(call.errors) == len(flagged), call.errors
    for error, (path, words) in zip(call.errors, flagged, strict=True):
        assert error.path == path and words in error.message


def test_the_hook_is_not_called_for_a_valid_call_and_none_keeps_the_call() -> None:
    calls: list[ToolCall] = []

    def keep(call: ToolCall, errors: list[SchemaMismatch]) -> None:
        calls.append(call)

    assert checked(call_events("get_weather", '{"city": "Rome"}'), repair=keep)[-2] == ToolCallEnd(
        0
    )
    end = checked(call_events("get_weather", "{}"), repair=keep)[-2]
    assert len(calls) == 1 and isinstance(end, ToolCallEnd) and end.errors


def test_a_call_cut_by_an_error_is_never_repaired_nor_checked() -> None:
    hook_calls: list[ToolCall] = []

    def hook(call: ToolCall, errors: list[SchemaMismatch]) -> None:
        hook_calls.append(call)

    events = call_events(" get_weather", "{}", '{"city": "Par', end=False)
    out = checked(events, repair=hook)
    assert out == events and not hook_calls
    call = accumulate(out).tool_calls[0]
    assert call.name == " get_weather" and not call.repairs and not call.errors
    assert call.parse_error is not None  # the fold marks it unusable


def test_the_end_encodes_as_before_when_there_is_nothing_to_say() -> None:
    assert encode_event_json(ToolCallEnd(1)) == b'{"type":"toolcall_end","index":1}'
    rich = ToolCallEnd(1, name="f", errors=(SchemaMismatch("/a", "bad"),), repairs=("x",))
    assert decode_event_json(encode_event_json(rich)) == rich


# -- through every shell --------------------------------------------------------------


def openai_tool_body(name: str, pieces: list[str], finish: str = "tool_calls") -> bytes:
    base = {"id": "chatcmpl-t", "object": "chat.completion.chunk", "created": 1, "model": "m"}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        return sse(base | {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})

    head = {
        "index": 0,
        "id": "call_1",
        "type": "function",
        "function": {"name": name, "arguments": ""},
    }
    out = [chunk({"role": "assistant", "tool_calls": [head]})]
    out += [chunk({"tool_calls": [{"index": 0, "function": {"arguments": p}}]}) for p in pieces]
    out.append(chunk({}, finish))
    out.append(sse("[DONE]"))
    return b"".join(out)


@pytest.fixture(scope="module")
def upstream() -> Iterator[FakeProvider]:
    with FakeProvider() as fake:
        fake.register_body("glitch", openai_tool_body(" get_weather", ["{}", '{"city"', ": 3}"]))
        cut = openai_tool_body("get_weather", ['{"city": ', '"/home/user'], finish="length")
        fake.register_body("cut", cut)
        yield fake


def _weather_call(upstream: FakeProvider, body: str, token: str) -> tuple[Model, Context]:
    """An openai-chat model answering with the fake's ``body``, and a context with the
    weather tool."""
    url = upstream.base_url("ok", body, token)
    model = Model(id="gpt-4o", provider="openai", api="openai-chat", base_url=url)
    context = Context.of("weather?")
    context.tools = [WEATHER]
    return model, context


@pytest.mark.parametrize("shell", SHELLS)
def test_every_shell_checks_and_repairs(upstream: FakeProvider, shell: str) -> None:
    model, context = _weather_call(upstream, "glitch", f"tools-{shell}")
    hooked: list[list[SchemaMismatch]] = []

    def repair(call: ToolCall, errors: list[SchemaMismatch]) -> ToolCall | None:
        hooked.append(errors)
        return msgspec.structs.replace(call, arguments={"city": str(call.arguments["city"])})

    async def go(client: Any) -> tuple[list[Event], list[Event]]:
        async with client.stream(model, context, FAST) as events:
            plain = [e async for e in events]
        with_hook = msgspec.structs.replace(FAST, repair_tool_call=repair)
        async with client.stream(model, context, with_hook) as events:
            return plain, [e async for e in events]

    plain, hooked_events = run(shell, go)
    call = accumulate(plain).tool_calls[0]
    assert call.name == "get_weather" and call.arguments == {"city": 3}
    assert [str(e) for e in call.errors] == ["/city: 3 is not of type string"]
    assert len(call.repairs) == 2 and call.streamed_arguments == '{}{"city": 3}'
    fixed = accumulate(hooked_events).tool_calls[0]
    assert fixed.arguments == {"city": "3"} and not fixed.errors and len(hooked) == 1
    assert json.loads(fixed.arguments_json) == {"city": "3"}


@pytest.mark.parametrize("shell", SHELLS)
def test_every_shell_leaves_a_call_cut_by_max_tokens_unrepaired(
    upstream: FakeProvider, shell: str
) -> None:
    model, context = _weather_call(upstream, "cut", f"cut-{shell}")
    hooked: list[ToolCall] = []

    def repair(call: ToolCall, errors: list[SchemaMismatch]) -> ToolCall:
        hooked.append(call)
        return _lenient(call, errors)

    async def go(client: Any) -> list[Event]:
        options = msgspec.structs.replace(FAST, repair_tool_call=repair)
        async with client.stream(model, context, options) as events:
            return [e async for e in events]

    events = run(shell, go)
    done = events[-1]
    assert isinstance(done, Done) and done.stop_reason == StopReason.LENGTH
    call = accumulate(events).tool_calls[0]
    assert not hooked and not call.repairs and call.parse_error is not None
    assert call.errors[-1].message.startswith("cut at max_tokens")


@pytest.mark.parametrize("shell", SHELLS)
def test_every_shell_flags_a_call_of_a_tool_when_none_was_declared(
    upstream: FakeProvider, shell: str
) -> None:
    """No tools declared used to skip the checks: an upstream's call of any tool was
    offered to run; it is flagged as with other tools declared."""
    model, _ = _weather_call(upstream, "glitch", f"none-{shell}")

    async def go(client: Any) -> list[Event]:
        async with client.stream(model, Context.of("weather?"), FAST) as events:
            return [e async for e in events]

    call = accumulate(run(shell, go)).tool_calls[0]
    assert [e.message for e in call.errors][-1] == (
        "no tool named 'get_weather' was declared (declared: none)"
    )


TWICE = Tool(
    name="deep",
    parameters={
        "allOf": [{"properties": {"a": {"$ref": "#"}}}, {"properties": {"a": {"$ref": "#"}}}]
    },
)


def _deep(depth: int) -> str:
    return '{"a": ' * depth + "{}" + "}" * depth


def test_the_calls_of_one_answer_share_one_budget() -> None:
    """Each call's check had a budget of its own: an answer of K calls cost K budgets."""
    events: list[Event] = [Start()]
    for i in range(12):
        events += [ToolCallStart(i, f"c{i}", "deep"), ToolCallDelta(i, _deep(20)), ToolCallEnd(i)]
    events.append(Done(stop_reason=StopReason.TOOL_USE))
    budget = CheckBudget(20_000)
    checks = ToolCallChecks([TWICE], budget=budget)
    out = checks.feed(events) + checks.finish()
    assert budget.spent == 20_000 + 12  # each call stopped at its first step past it
    ends = [e for e in out if isinstance(e, ToolCallEnd)]
    assert len(ends) == 12 and all("more than 20000 steps" in str(e.errors) for e in ends)


def test_a_held_call_is_checked_once() -> None:
    """A call with errors is judged at its end and said when released: charged once."""
    arguments = {"units": "k", "days": list(range(50))}
    alone = CheckBudget()
    check_json(arguments, WEATHER.parameters, budget=alone)
    budget = CheckBudget()
    checks = ToolCallChecks([WEATHER], budget=budget)
    out = checks.feed(call_events("get_weather", json.dumps(arguments))) + checks.finish()
    assert accumulate(out).tool_calls[0].errors
    assert budget.spent == alone.spent


def test_options_take_a_hook() -> None:
    assert Options().repair_tool_call is None


def _cut_at_max_tokens(*pieces: str) -> list[Event]:
    """An openai-chat answer cut by its token limit inside a tool call's arguments:
    the decoder ends the call, then the stream says ``length``."""
    return [
        Start(),
        ToolCallStart(0, "call_1", "get_weather"),
        *[ToolCallDelta(0, p) for p in pieces],
        ToolCallEnd(0),
        Done(stop_reason=StopReason.LENGTH),
    ]


def _lenient(call: ToolCall, errors: list[SchemaMismatch]) -> ToolCall:
    """A json-repair style hook: closes whatever is open and calls it valid."""
    return msgspec.structs.replace(call, arguments={"city": "Paris"})


def test_a_call_cut_by_max_tokens_is_marked_cut_and_never_repaired() -> None:
    hooked: list[ToolCall] = []

    def hook(call: ToolCall, errors: list[SchemaMismatch]) -> ToolCall:
        hooked.append(call)
        return _lenient(call, errors)

    out = checked(_cut_at_max_tokens('{"city": "Par'), repair=hook)
    end = out[-2]
    assert isinstance(end, ToolCallEnd) and not hooked
    assert end.arguments is None and not end.repairs
    assert [e.message.split(":")[0] for e in end.errors][-1] == "cut at max_tokens"
    call = accumulate(out).tool_calls[0]
    assert call.errors and call.parse_error is not None


def test_a_complete_call_before_a_length_cut_is_still_repaired() -> None:
    out = checked(_cut_at_max_tokens("{}", '{"city": "Paris"}'), repair=_lenient)
    end = out[-2]
    assert isinstance(end, ToolCallEnd) and end.arguments == '{"city": "Paris"}' and end.repairs


def test_held_events_keep_their_order_whatever_the_batches() -> None:
    events = [
        *call_events("get_weather", "{}")[:-1],
        ToolCallStart(1, "call_2", "get_weather"),
        ToolCallDelta(1, '{"city": "Rome"}'),
        ToolCallEnd(1),
        Done(stop_reason=StopReason.TOOL_USE),
    ]
    checks = ToolCallChecks([WEATHER])
    batches = [checks.feed([event]) for event in events]
    assert batches[3] == []  # the flagged end is held ...
    # ... until the next call shows the answer went on past it: released before it
    assert [type(e) for e in batches[4]] == [ToolCallEnd, ToolCallStart]
    assert batches[4][0].errors  # type: ignore[union-attr]
    assert [e for b in batches for e in b] == [*events[:3], batches[4][0], *events[4:]]


def test_what_is_held_stays_small_whatever_an_upstream_sends_after_a_flagged_call() -> None:
    """A hostile upstream (or a model) sends one call that breaks its schema, then
    megabytes of text: the text shows the call was not cut, so the call is released
    and the text passes as it comes, not held in memory until the stream ends."""
    checks = ToolCallChecks([WEATHER])
    flagged = call_events("get_weather", "{}")[:-1]
    assert checks.feed(flagged) == flagged[:-1]  # its end is held
    text = [TextStart(1), *[TextDelta(1, "x" * 1024) for _ in range(64)]]
    out = checks.feed(text[:1])
    assert [type(e) for e in out] == [ToolCallEnd, TextStart] and out[0].errors  # type: ignore[union-attr]
    assert all(checks.feed([delta]) == [delta] for delta in text[1:])
    assert not checks._held


def test_a_broken_call_the_answer_went_on_after_is_not_called_cut() -> None:
    """Only the answer's last call can be cut by its token limit: an earlier one with
    broken arguments is reported broken, not cut, and the hook may repair it."""
    events = [
        *call_events("get_weather", '{"city": "Par')[:-1],
        ToolCallStart(1, "call_2", "get_weather"),
        ToolCallDelta(1, '{"city": "Ro'),
        ToolCallEnd(1),
        Done(stop_reason=StopReason.LENGTH),
    ]
    out = checked(events, repair=_lenient)
    first, last = (e for e in out if isinstance(e, ToolCallEnd))
    assert not any(m.message.startswith("cut at") for m in first.errors)
    assert json.loads(first.arguments or "") == {"city": "Paris"}  # the hook repaired it
    assert last.arguments is None and last.errors[-1].message.startswith("cut at max_tokens")


def test_a_calls_arguments_are_held_at_about_their_own_size() -> None:
    """An upstream sending a call's arguments two characters a delta: the checks (and
    the encoders that send a call whole) hold its text, not ~50 bytes of str object
    per delta, so what is held is bounded by the content cap, not many times it."""
    checks = ToolCallChecks([WEATHER])
    whole = WholeToolCalls()
    n = 100_000
    checks.feed([Start(), ToolCallStart(0, "call_1", "get_weather")])
    whole.add(ToolCallStart(0, "call_1", "get_weather"))
    tracemalloc.start()
    try:
        for i in range(n):
            delta = ToolCallDelta(0, chr(97 + i % 26) * 2)  # a new str each time
            checks.feed([delta])
            whole.add(delta)
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert held < 4 * (2 * n) * 2  # both holders together: a few times the text, at most
    expected = "".join(chr(97 + i % 26) * 2 for i in range(n))
    assert whole.end_text(ToolCallEnd(0)) == ("call_1", "get_weather", expected)
    assert checks._calls.streamed(ToolCallEnd(0)) == ("call_1", "get_weather", expected)
