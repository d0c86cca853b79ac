"""Many streams on one local model: batching, fair queueing, yielding, and exceptions as themselves.

A gate in front of the model's ``_generate`` holds the lane while the test
queues requests, so which requests share a batch is decided by the test, not
by timing. The oracle for every batched or resumed stream is the same request
run alone on the same model.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("ctranslate2")
pytest.importorskip("gguf")

import trio
from tiny_model import build_tiny_model

from streamfn.core._events import Done, Event, StopReason, TextDelta
from streamfn.core._messages import Context
from streamfn.core._options import Options
from streamfn.io_asyncio._local import stream_local as asyncio_stream_local
from streamfn.io_trio._local import stream_local as trio_stream_local
from streamfn.local import _batching as batching
from streamfn.local._model import LocalModel, _Job

PROMPTS = [
    Context.of("the cat sat on the mat"),
    Context.of("the hat"),
    Context.of("then the rat ate the oat and the cat sat on the hat"),
    Context.of("a mat"),
]


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny"))


@pytest.fixture(scope="module")
def float_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny32"), quantization="float32")


@pytest.fixture
def one_lane(tiny_dir: Path) -> Iterator[LocalModel]:
    with LocalModel(tiny_dir, parallel_batches=1) as model:
        yield model


def wait_for(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 30  # a hang guard, not a timing claim
    while not condition():
        assert time.monotonic() < deadline, "condition never held"
        time.sleep(0.005)


def text_of(events: list[Event]) -> str:
    return "".join(e.delta for e in events if isinstance(e, TextDelta))


class Gate:
    """Holds the first ``_generate`` call (the lane) until opened; records batch sizes."""

    def __init__(self, model: LocalModel, monkeypatch: pytest.MonkeyPatch) -> None:
        self.entered = threading.Event()
        self.opened = threading.Event()
        self.batches: list[int] = []
        original = model._generate

        def gated(contexts: list[list[str]], **kwargs: Any) -> None:
            if not self.batches:
                self.entered.set()
                self.opened.wait()
            self.batches.append(len(contexts))
            original(contexts, **kwargs)

        monkeypatch.setattr(model, "_generate", gated)
        self.model = model

    def queued(self) -> int:
        return len(self.model._scheduler._queue)


def alone(model: LocalModel, context: Context, options: Options) -> list[Event]:
    return list(model.stream_sync(context, options))


def concurrently(
    model: LocalModel, gate: Gate, requests: list[tuple[Context, Options]]
) -> list[list[Event]]:
    """Run ``requests`` as threads queued behind a one-token blocker, then open the gate."""
    return in_threads(gate, [lambda r=r: alone(model, *r) for r in requests])


def in_threads(gate: Gate, runs: list[Callable[[], Any]]) -> list[Any]:
    """Each of ``runs`` in its own thread, all queued while a blocker holds the lane."""
    results: list[Any] = [None] * len(runs)

    def run(i: int) -> None:
        results[i] = runs[i]()

    blocker = threading.Thread(target=alone, args=(gate.model, PROMPTS[0], Options(max_tokens=1)))
    blocker.start()
    gate.entered.wait()  # the lane waits in the gate with the blocker alone
    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(runs))]
    try:
        for thread in threads:
            thread.start()
        wait_for(lambda: gate.queued() == len(runs))
    finally:  # a failed wait must not leave threads parked in the gate
        gate.opened.set()
        for thread in [blocker, *threads]:
            thread.join()
    return results


@pytest.mark.parametrize("directory", ["tiny_dir", "float_dir"])
def test_greedy_output_is_the_same_alone_and_batched(
    directory: str, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Prompts of different lengths share one batch; each stream equals its solo run,
    event for event (usage, stop reason and per-request max_tokens included)."""
    path: Path = request.getfixturevalue(directory)
    with LocalModel(path, parallel_batches=1) as model:
        requests = [(p, Options(max_tokens=6 + 3 * i)) for i, p in enumerate(PROMPTS)]
        expected = [alone(model, *r) for r in requests]
        gate = Gate(model, monkeypatch)
        assert concurrently(model, gate, requests) == expected
        assert gate.batches == [1, len(requests)]  # the blocker, then all four together
        for events, (_, options) in zip(expected, requests, strict=True):
            done = events[-1]
            assert isinstance(done, Done) and done.usage.output == options.max_tokens


def test_a_request_arriving_during_a_batch_joins_it(
    one_lane: LocalModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    """CTranslate2 cannot grow a running batch, so the young batch restarts with the
    newcomer (re-reading its own text so far); both streams equal their solo runs."""
    requests = [(PROMPTS[0], Options(max_tokens=12)), (PROMPTS[1], Options(max_tokens=12))]
    expected = [alone(one_lane, *r) for r in requests]
    gate = Gate(one_lane, monkeypatch)
    results: list[list[Event]] = []
    first = threading.Thread(target=lambda: results.append(alone(one_lane, *requests[0])))
    first.start()
    gate.entered.wait()  # the first request is running, alone
    second = threading.Thread(target=lambda: results.append(alone(one_lane, *requests[1])))
    second.start()
    wait_for(lambda: gate.queued() == 1)
    gate.opened.set()
    first.join()
    second.join()
    assert sorted(results, key=text_of) == sorted(expected, key=text_of)
    assert gate.batches == [1, 2]  # one token alone, then together


def test_a_yielding_batch_resumes_where_it_was(
    tiny_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One lane, batches of one, no grace: streams take turns token by token
    (each turn re-reads prompt + text so far) and still produce their solo output."""
    monkeypatch.setattr(batching, "SLICE_PER_PREFILL", 0.0)
    with LocalModel(tiny_dir, parallel_batches=1, max_batch_size=1, max_queue_wait=0) as model:
        requests = [(p, Options(max_tokens=10)) for p in PROMPTS[:3]]
        expected = [alone(model, *r) for r in requests]
        gate = Gate(model, monkeypatch)
        assert concurrently(model, gate, requests) == expected
        assert len(gate.batches) > 2 * len(requests)  # they really took turns


def test_the_wait_is_bounded_by_max_queue_wait(
    tiny_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A long batch yields to a queued request only after ``max_queue_wait`` of its slice."""
    with LocalModel(tiny_dir, parallel_batches=1, max_batch_size=1, max_queue_wait=0.2) as model:
        clock = [0.0]
        model._scheduler._clock = lambda: clock[0]
        original = _Job._on_step
        steps: list[_Job] = []

        def tick(job: _Job, step: Any) -> bool:
            steps.append(job)
            clock[0] += 0.01  # every token takes 10 ms of scheduler time
            return original(job, step)

        monkeypatch.setattr(_Job, "_on_step", tick)
        gate = Gate(model, monkeypatch)
        requests = [(PROMPTS[0], Options(max_tokens=100)), (PROMPTS[1], Options(max_tokens=5))]
        long, short = concurrently(model, gate, requests)
        assert isinstance(long[-1], Done) and isinstance(short[-1], Done)
        first_short = next(i for i, job in enumerate(steps) if job.plan.max_tokens == 5)
        # the long request ran one 0.2 s slice (about 20 tokens) before the short one started
        assert 15 <= first_short <= 25, first_short


def test_different_sampling_settings_run_in_different_batches(
    one_lane: LocalModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = Gate(one_lane, monkeypatch)
    requests = [
        (PROMPTS[0], Options(max_tokens=4)),
        (PROMPTS[1], Options(max_tokens=4, temperature=0.8)),
        (PROMPTS[2], Options(max_tokens=4)),
        (PROMPTS[3], Options(max_tokens=4, temperature=0.8, seed=3)),
    ]
    results = concurrently(one_lane, gate, requests)
    assert all(isinstance(events[-1], Done) for events in results)
    # blocker; greedy pair; sampled; seeded alone
    assert gate.batches == [1, 2, 1, 1]
    assert text_of(results[3]) == text_of(alone(one_lane, *requests[3]))  # the seed still holds


def test_a_queued_stream_cancelled_before_its_turn_never_runs(
    one_lane: LocalModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = Gate(one_lane, monkeypatch)

    async def main() -> None:
        blocker = asyncio.create_task(asyncio.to_thread(alone, one_lane, PROMPTS[0], Options()))
        await asyncio.to_thread(gate.entered.wait)

        async def consume() -> None:
            async with asyncio_stream_local(one_lane, PROMPTS[1]) as events:
                async for _ in events:
                    pass

        task = asyncio.create_task(consume())
        await asyncio.to_thread(wait_for, lambda: gate.queued() == 1)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task  # returns while the lane is still held: nothing waited on the model
        assert gate.queued() == 0
        gate.opened.set()
        await blocker

    asyncio.run(main())
    assert gate.batches == [1]


def test_one_stream_leaving_a_batch_stops_it_alone(
    one_lane: LocalModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stream that breaks out stops within one token; its batch mates run to the end."""
    after_stop: dict[int, int] = {}
    original = _Job._on_step

    def counting(job: _Job, step: Any) -> bool:
        after_stop[id(job)] = after_stop.get(id(job), 0) + job.stop.is_set()
        return original(job, step)

    monkeypatch.setattr(_Job, "_on_step", counting)
    expected = alone(one_lane, PROMPTS[1], Options(max_tokens=30))
    gate = Gate(one_lane, monkeypatch)

    def leaver() -> int:
        seen = 0
        for event in one_lane.stream_sync(PROMPTS[0], Options(max_tokens=200)):
            seen += isinstance(event, TextDelta)
            if seen == 2:
                break
        return seen

    runs = [leaver, lambda: alone(one_lane, PROMPTS[1], Options(max_tokens=30))]
    assert in_threads(gate, runs) == [2, expected]
    assert gate.batches == [1, 2]
    assert max(after_stop.values()) <= 1


# -- the trio flavour raises what the caller raised ------------------------------------


@pytest.mark.parametrize("raised", [ValueError("mine"), KeyboardInterrupt()])
def test_trio_stream_raises_the_callers_exception_as_itself(
    one_lane: LocalModel, raised: BaseException
) -> None:
    async def main() -> None:
        async with trio_stream_local(one_lane, PROMPTS[0], Options(max_tokens=100)) as events:
            async for event in events:
                if isinstance(event, TextDelta):
                    raise raised

    with pytest.raises(type(raised)) as caught:
        trio.run(main)
    assert caught.value is raised  # not an ExceptionGroup around it
    wait_for(lambda: one_lane._scheduler.idle)


def test_trio_stream_inside_a_cancelled_nursery_is_plain_cancellation(
    one_lane: LocalModel,
) -> None:
    done: list[StopReason] = []

    async def main() -> None:
        async with trio.open_nursery() as nursery:

            async def consume() -> None:
                async with trio_stream_local(
                    one_lane, PROMPTS[0], Options(max_tokens=200)
                ) as events:
                    async for event in events:
                        if isinstance(event, TextDelta):
                            nursery.cancel_scope.cancel()
                        if isinstance(event, Done):
                            done.append(event.stop_reason)

            nursery.start_soon(consume)

    trio.run(main)  # nothing escapes: the cancellation was caught by its own scope
    assert not done
    wait_for(lambda: one_lane._scheduler.idle)
