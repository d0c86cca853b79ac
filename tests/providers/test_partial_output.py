"""Structured output as it grows: typed partial objects after each delta that changes
them, the validated object at the end; linear; native JSON and the forced answer tool;
every shell, and a streamfn proxy client of ``streamfn serve``."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from typing import Any

import msgspec
import pydantic
import pytest
from corpus_support import CORPUS, corpus_dir
from fake_provider import FakeProvider
from hypothesis import given, settings
from hypothesis import strategies as st
from scaling import assert_linear
from shell_runner import FAST, SHELLS, run
from test_structured import anthropic_tool_answer

from streamfn.client._partial_output import partial_outputs
from streamfn.core import (
    CompletionError,
    Context,
    Done,
    Error,
    Model,
    Options,
    OutputValidationError,
    Start,
    TextDelta,
    TextEnd,
    TextStart,
    get_model,
    open_call,
    replay,
)
from streamfn.core._events import Event
from streamfn.core.stages._partial_output import (
    PartialOutput,
    PartialOutputs,
    _Shapes,
    _Typer,
    iter_partial_outputs,
)
from streamfn.fuzz._fake_bodies import openai_body


class Day(msgspec.Struct):
    date: str
    high: float
    notes: list[str] = []


class Forecast(msgspec.Struct):
    city: str
    days: list[Day]
    unit: str = "c"


class PDay(pydantic.BaseModel):
    date: str
    high: float


class PForecast(pydantic.BaseModel):
    city: str
    days: list[PDay]


@dataclasses.dataclass
class DForecast:
    city: str
    days: list[dict[str, Any]]


ANSWER = {
    "city": "Paris",
    "days": [
        {"date": "2025-06-01", "high": 21.5, "notes": ["sun", "wind"]},
        {"date": "2025-06-02", "high": 19.0, "notes": []},
    ],
    "unit": "c",
}
TEXT = json.dumps(ANSWER)


def stream_of(text: str, size: int = 3) -> list[Event]:
    deltas: list[Event] = [TextDelta(0, text[i : i + size]) for i in range(0, len(text), size)]
    return [Start(model="m"), TextStart(0), *deltas, TextEnd(0), Done()]


def test_partials_are_typed_leniently_and_the_last_is_validated() -> None:
    outs = list(iter_partial_outputs(stream_of(TEXT), Forecast))
    partials, final = outs[:-1], outs[-1]
    assert final == PartialOutput(msgspec.convert(ANSWER, Forecast), final=True)
    assert all(isinstance(p.value, Forecast) and not p.final for p in partials)
    first_city = next(p.value.city for p in partials if p.value.city)
    assert "Paris".startswith(first_city)  # strings shown as far as they arrived
    # a required field not there yet is None; a field with a default keeps it
    early = partials[0].value
    assert early.days is None and early.unit == "c"
    # nested objects are typed too, as they arrive
    nested = [p.value.days[0] for p in partials if p.value.days]
    assert nested and all(isinstance(d, Day) for d in nested)
    assert msgspec.to_builtins(partials[-1].value) == ANSWER


@pytest.mark.parametrize("spec", [PForecast, DForecast])
def test_pydantic_models_and_dataclasses(spec: Any) -> None:
    answer = {"city": "Oslo", "days": [{"date": "d1", "high": 3.0}]}
    outs = list(iter_partial_outputs(stream_of(json.dumps(answer), 2), spec))
    assert all(isinstance(o.value, spec) for o in outs)
    assert outs[-1].final and outs[-1].value.city == "Oslo"
    assert any(o.value.days is None for o in outs)  # not there yet: None


def test_a_dict_schema_gives_the_json_value() -> None:
    schema = {"type": "object", "properties": {"city": {"type": "string"}}}
    outs = list(iter_partial_outputs(stream_of('{"city": "Rome"}', 1), schema))
    assert [o.value for o in outs[:-1]][-1] == {"city": "Rome"}
    assert outs[-1] == PartialOutput({"city": "Rome"}, final=True)


def test_only_deltas_that_change_the_value_give_one() -> None:
    events: list[Event] = [Start(), TextStart(0)]
    events += [
        TextDelta(0, d) for d in ['{"ci', 'ty"', ": ", '"P', '"', "  ", ', "d', 'ays": [', "]}"]
    ]
    events += [TextEnd(0), Done()]
    outputs = PartialOutputs({"type": "object"})
    got = [
        (e.delta, o)
        for e in events
        if (o := outputs.feed(e)) is not None and not o.final and isinstance(e, TextDelta)
    ]
    # a key without its value, a closing quote, blanks, a closing bracket: no change
    assert [d for d, _ in got] == ['{"ci', '"P', 'ays": [']
    assert [o.value for _, o in got][-1] == {"city": "P", "days": []}


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 9), min_size=1, max_size=40))
def test_typing_what_is_finished_once_equals_typing_it_all_again(sizes: list[int]) -> None:
    """The incremental typer reuses what is finished; at every step its value equals a
    fresh typer's on the same JSON (nothing stale, nothing lost)."""
    outputs = PartialOutputs(Forecast)
    at = 0
    pieces = []
    for size in sizes * (len(TEXT) // sum(sizes) + 1):
        if at >= len(TEXT):
            break
        pieces.append(TEXT[at : at + size])
        at += size
    events: list[Event] = [Start(), TextStart(0), *(TextDelta(0, p) for p in pieces)]
    for event in events:
        partial = outputs.feed(event)
        if partial is not None:
            fresh = _Typer(_Shapes().of_type(Forecast)).typed(outputs.parser.value())
            assert msgspec.to_builtins(partial.value) == msgspec.to_builtins(fresh)


#: escapes that end no character (deltas that change nothing), a finished list of
#: strings, then a key the type has no field for being written
TRICKY = json.dumps(
    {
        "city": "Pa\u00e9ris \ud83c\udf0d",
        "days": [{"date": "d", "high": 1.0, "notes": ["sun", "wi\nnd"]}],
        "extra": "zzzz",
        "unit": "f",
    },
    ensure_ascii=True,
)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 7), min_size=1, max_size=30))
def test_the_live_value_is_whole_after_every_delta(sizes: list[int]) -> None:
    """The typed value is updated in place; after every delta, one that gave nothing
    new included, the last value given equals a fresh typing of the JSON so far."""
    outputs = PartialOutputs(Forecast)
    outputs.feed(Start())
    outputs.feed(TextStart(0))
    last: PartialOutput | None = None
    at = 0
    for size in sizes * (len(TRICKY) // sum(sizes) + 1):
        if at >= len(TRICKY):
            break
        partial = outputs.feed(TextDelta(0, TRICKY[at : at + size]))
        at += size
        last = partial or last
        if last is not None:
            fresh = _Typer(_Shapes().of_type(Forecast)).typed(outputs.parser.value())
            assert msgspec.to_builtins(last.value) == msgspec.to_builtins(fresh)


class Note(msgspec.Struct):
    title: str
    body: str


@dataclasses.dataclass
class DNote:
    title: str
    body: str


class PNote(pydantic.BaseModel):
    title: str
    body: str


class Pages(msgspec.Struct):
    pages: list[str]


@pytest.mark.parametrize(
    ("spec", "shape"),
    [
        (Note, lambda text: {"title": "t", "body": text}),
        (DNote, lambda text: {"title": "t", "body": text}),
        (PNote, lambda text: {"title": "t", "body": text}),
        (Pages, lambda text: {"pages": ["a", text]}),
    ],
    ids=["struct", "dataclass", "pydantic", "list-item"],
)
def test_one_long_string_grows_in_linear_time(spec: Any, shape: Any) -> None:
    """8x the string costs about 8x: the previous value the caller holds (the loop's
    variable) kept the string, so each delta copied all of it (1 MB took seconds)."""

    def prepare(n: int) -> Any:
        events = stream_of(json.dumps(shape("x" * n)), 64)

        def grow() -> None:
            for _ in iter_partial_outputs(events, spec):
                pass

        return grow

    assert_linear(prepare, 200_000)


def test_a_failed_stream_raises_and_a_bad_answer_does_not_validate() -> None:
    cut = [*stream_of(TEXT)[:-2], Error.network("dropped")]
    with pytest.raises(CompletionError):
        list(iter_partial_outputs(cut, Forecast))
    with pytest.raises(OutputValidationError):
        list(iter_partial_outputs(stream_of('{"city": 3, "days": []}'), Forecast))


def test_linear_in_the_answer() -> None:
    """8x the answer costs about 8x, not 64x: typing reuses what is finished."""

    def prepare(n: int) -> Any:
        days = [
            {"date": f"2025-06-{i:05d}", "high": i + 0.5, "notes": ["a", "b"]} for i in range(n)
        ]
        events = stream_of(json.dumps({"city": "Paris", "days": days}), 8)
        return lambda: list(iter_partial_outputs(events, Forecast))

    assert_linear(prepare, 300)


def test_the_forced_answer_tool_grows_the_same_object() -> None:
    """An older Claude answers through the forced tool; the caller sees the same."""
    model = get_model("anthropic:claude-3-5-haiku-latest")
    options = Options(response_schema=Forecast, api_key="k")
    call = open_call(model, Context.of("weather?"), options)
    events = call.receive_response(200, [("content-type", "text/event-stream")])
    events += call.receive_data(
        anthropic_tool_answer([TEXT[i : i + 5] for i in range(0, len(TEXT), 5)])
    )
    outs = list(iter_partial_outputs(events, Forecast))
    assert len(outs) > 5 and outs[-1] == PartialOutput(
        msgspec.convert(ANSWER, Forecast), final=True
    )
    assert all(isinstance(o.value, Forecast) for o in outs)


# -- every shell, and through the server -------------------------------------------------


@pytest.fixture(scope="module")
def upstream() -> Iterator[FakeProvider]:
    with FakeProvider() as fake:
        fake.register_body("json", openai_body([TEXT[i : i + 6] for i in range(0, len(TEXT), 6)]))
        yield fake


async def grow(client: Any, model: Model, options: Options) -> list[PartialOutput]:
    async with client.stream(model, Context.of("weather?"), options) as events:
        return [p async for p in partial_outputs(events, options.response_schema)]


@pytest.mark.parametrize("shell", SHELLS)
def test_every_shell_grows_the_object(upstream: FakeProvider, shell: str) -> None:
    model = Model(
        id="gpt-4o",
        provider="openai",
        api="openai-chat",
        base_url=upstream.base_url("ok", "json", f"po-{shell}"),
    )
    options = msgspec.structs.replace(FAST, response_schema=Forecast)
    outs = run(shell, grow, model, options)
    assert len(outs) > 10 and outs[-1].final
    assert outs[-1].value == msgspec.convert(ANSWER, Forecast)


def test_the_blocking_shell_iterates_them_too(upstream: FakeProvider) -> None:
    from streamfn.io_sync import Client

    model = Model(
        id="gpt-4o",
        provider="openai",
        api="openai-chat",
        base_url=upstream.base_url("ok", "json", "po-sync-iter"),
    )
    options = msgspec.structs.replace(FAST, response_schema=Forecast)
    with Client(environ={}) as client, client.stream(model, Context.of("x"), options) as events:
        outs = list(iter_partial_outputs(events, Forecast))
    assert outs[-1].final and outs[-1].value.city == "Paris"


class Weather(msgspec.Struct):
    city: str
    temperature: float
    units: str


def test_a_recorded_structured_answer_grows_and_validates() -> None:
    """OpenAI's own recording of a json_schema answer streamed as content deltas."""
    recorded = CORPUS / "openai-chat" / "structured-output-json-content.sse"
    corpus_dir()
    events = replay(
        "openai-chat",
        recorded.read_bytes(),
        headers=[("content-type", "text/event-stream")],
        options=Options(response_schema=Weather, api_key="k"),
    )
    outs = list(iter_partial_outputs(events, Weather))
    final = Weather(city="San Francisco", temperature=61, units="f")
    assert outs[-1] == PartialOutput(final, final=True)
    growing = [o.value for o in outs[:-1]]
    assert len(growing) >= 3 and all(isinstance(v, Weather) for v in growing)
    assert growing[0].temperature is None and msgspec.to_builtins(
        growing[-1]
    ) == msgspec.to_builtins(final)
