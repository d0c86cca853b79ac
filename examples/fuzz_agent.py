"""Fuzz an agent turn built on streamfn: every wire-format transcript, every fault.

Needs the [fuzz] extra. Run as a script, or put `test_agent_turn` in your test
suite taking the `shared_fake_provider` pytest fixture in place of `fake` (a
`@given` test needs that session-wide one: Hypothesis refuses the per-test
`fake_provider` there).
"""

import asyncio

from hypothesis import given, settings

from streamfn.core import Context, Error, Event, Model, Options, accumulate
from streamfn.fuzz import FakeProvider, faults, same_stream, transcripts
from streamfn.io_asyncio import stream


async def agent_turn(model: Model) -> list[Event]:  # your code goes here
    options = Options(api_key="k", max_attempts=2, first_byte_timeout=2, idle_timeout=2)
    async with stream(model, Context.of("Plan my trip"), options) as events:
        return [event async for event in events]


def main() -> None:
    with FakeProvider() as fake:

        @settings(max_examples=20, deadline=None)
        @given(transcripts("anthropic"), faults("ok", "status", "drop"))
        def test_agent_turn(t, fault):
            url = fake.serve(t.body, t.content_type, fault=fault)
            model = Model(id="m", provider="anthropic", api="anthropic", base_url=url)
            events = asyncio.run(agent_turn(model))
            message = accumulate(events)
            # the right answer or an error, never a wrong or cut answer reported as success
            assert isinstance(events[-1], Error) or same_stream("anthropic", events, t.events)
            # no tool call twice, even when the shell retried
            assert len({c.id for c in message.tool_calls}) == len(message.tool_calls)

        test_agent_turn()
    print("agent turn held on every transcript and fault drawn")


if __name__ == "__main__":
    main()
