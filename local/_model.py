"""`LocalModel`: a CTranslate2 decoder streaming the same events as any provider.

Threads and a callback: generation runs on the model's lanes
(`BatchScheduler`): concurrent streams share the model through batched
generation. CTranslate2 calls back with each token id; the callback only
hands the id to the stream's consumer (`Generation`: a queue here, a trio
channel or an asyncio queue in the shells' adapters) and checks the stream's
stop flag, so a caller who breaks out or is cancelled stops its generation
within one token, and the stream waits until the lane has let go of it
before it ends: no generation outlives its stream. Token ids become bytes
and the pure `TaggedDecoder` turns them into events on the consumer side,
exactly as a network shell feeds a provider. No event loop is imported here.
"""

from __future__ import annotations

import atexit
import os
import queue
import threading
import weakref
from collections.abc import Callable, Generator
from pathlib import Path
from typing import Any, Final

from streamfn.core import Context, Error, Event, Model, Options, Start, TokenCount, Usage
from streamfn.core._tagged import TaggedDecoder

from ._batching import END as _END
from ._batching import BatchScheduler, Item
from ._batching import Job as _Job
from ._batching import Plan as _Plan
from ._cache import (
    METADATA_FILE,
    TOKENIZER_FILE,
    Progress,
    json_object,
    no_progress,
    read_json,
    read_vocabulary,
)
from ._guard import model_guard, repetition_guard
from ._prompt import ChatTemplate, TemplateError
from ._sampling import generator_seed, sampling_arguments
from ._tokens import special_token_text, token_bytes_table

__all__ = ["Generation", "LocalModel"]

#: CTranslate2's RNG is per worker thread and seeded once; serialise seeded loads.
_SEED_LOCK: Final = threading.Lock()
_DEFAULT_MAX_TOKENS: Final = 2048

#: models still holding a CTranslate2 generator (see `_close_all_at_exit`)
_LIVE: Final[weakref.WeakSet[LocalModel]] = weakref.WeakSet()


@atexit.register
def _close_all_at_exit() -> None:
    """Drop generators before interpreter shutdown.

    CTranslate2 4.8 aborts the process ("terminate called without an active
    exception") when a generator that ever ran a Python callback is destroyed
    during interpreter finalisation; destroying it at exit time is fine.
    """
    for model in list(_LIVE):
        model.close()


class _Session:
    """Consumer side of one stream: ids -> bytes -> `TaggedDecoder` -> events. No threads."""

    def __init__(self, model: LocalModel, plan: _Plan) -> None:
        self.model = model
        self.plan = plan
        self.decoder = TaggedDecoder(
            start=model._start(),
            stop=plan.options.stop or (),
            start_in_thinking=plan.start_in_thinking,
            max_content_bytes=plan.options.max_content_bytes,
            max_tool_call_bytes=plan.options.max_event_bytes,
        )
        self.generated = 0
        self.ended = False

    @property
    def finished(self) -> bool:
        return self.decoder.finished

    @property
    def wants_stop(self) -> bool:
        return self.decoder.stopped or self.decoder.finished

    def usage(self) -> Usage:
        return Usage(input=len(self.plan.prompt), output=self.generated)

    def start(self) -> list[Event]:
        return self.decoder.receive_data(b"")

    def handle(self, item: Item) -> list[Event]:
        if isinstance(item, int):
            self.generated += 1
            if item in self.model._end_ids:
                self.ended = True
                return []
            return self.decoder.receive_data(self.model._token_bytes[item])
        if item is _END:
            length = (
                not self.ended
                and not self.decoder.stopped
                and self.generated >= self.plan.max_tokens
            )
            return self.decoder.receive_eof(usage=self.usage(), length=length)
        return self.decoder.fail(
            Error(
                message=f"local generation failed: {type(item).__name__}: {item}",
                usage=self.usage(),
            )
        )


class LocalModel:
    """A CTranslate2 decoder model directory with its tokenizer and chat template.

    ``compute_type="int8"`` with one intra-op thread per batch is the measured
    sweet spot for small models on CPU (two intra-op threads were slower and
    degrade badly when the machine is busy).

    Concurrent streams share the model through batched generation (see
    `local/_batching.py`): up to ``parallel_batches`` batches run at once
    (default: one per CPU core, at most 4), each of up to ``max_batch_size``
    streams with the same sampling settings. Further requests queue in FIFO
    order; one that has waited ``max_queue_wait`` seconds while every lane is
    busy makes the oldest batch yield, and that batch's streams later resume
    where they were. Seeded sampling (``temperature > 0`` with a ``seed``) runs
    alone, so the seed reproduces the same text. Greedy output (temperature 0)
    does not depend on who else is in the batch.

    The repetition guard (`local/_guard.py`) is off unless set here or in a
    request's ``Options.extra_body``; a guarded stream never yields its lane.
    """

    def __init__(
        self,
        model_dir: str | Path,
        *,
        compute_type: str = "int8",
        intra_threads: int = 1,
        device: str = "cpu",
        max_batch_size: int = 8,
        parallel_batches: int | None = None,
        max_queue_wait: float = 5.0,
        repetition_penalty: float = 1.0,
        no_repeat_ngram_size: int = 0,
    ) -> None:
        import ctranslate2

        self._guard = model_guard(repetition_penalty, no_repeat_ngram_size)

        self.model_dir = Path(model_dir)
        if not (self.model_dir / "model.bin").is_file():
            raise FileNotFoundError(
                f"{self.model_dir} is not a CTranslate2 model directory (no model.bin)"
            )
        lanes = parallel_batches or max(1, min(4, os.cpu_count() or 1))
        self._generator_args: dict[str, Any] = {
            "device": device,
            "compute_type": compute_type,
            "intra_threads": intra_threads,
        }
        self._generator: Any = ctranslate2.Generator(
            str(self.model_dir), inter_threads=lanes, **self._generator_args
        )
        self._scheduler = BatchScheduler(
            self,
            max_batch_size=max_batch_size,
            parallel_batches=lanes,
            max_queue_wait=max_queue_wait,
        )
        _LIVE.add(self)
        meta, tokenizer_config = self._load_tokenizer()
        #: the model as the registry describes models (``provider="local"``, zero prices)
        self.info = self._describe(meta, tokenizer_config)

    def _load_tokenizer(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """Tokenizer, byte table, end tokens, chat template; returns (metadata, tokenizer_config)."""
        from tokenizers import Tokenizer  # tokenizer.json is megabytes: read once, used twice

        tokenizer_text = (self.model_dir / TOKENIZER_FILE).read_text(encoding="utf-8")
        tokenizer_json = json_object(tokenizer_text)
        self._tokenizer = Tokenizer.from_str(tokenizer_text)
        config = read_json(self.model_dir / "config.json")
        meta = read_json(self.model_dir / METADATA_FILE)
        tokenizer_config = read_json(self.model_dir / "tokenizer_config.json")
        vocabulary = read_vocabulary(self.model_dir)
        self._token_bytes = token_bytes_table(vocabulary, tokenizer_json)
        ids = {token: i for i, token in enumerate(vocabulary)}
        eos = config.get("eos_token") or special_token_text(tokenizer_config.get("eos_token"))
        end_tokens = meta.get("end_tokens") or [eos, "<|im_end|>", "<|endoftext|>", "<|eot_id|>"]
        self._end_tokens = [t for t in dict.fromkeys(end_tokens) if t and t in ids]
        self._end_ids = frozenset(ids[t] for t in self._end_tokens)
        self.template = ChatTemplate.from_model_dir(
            self.model_dir,
            bos_token=config.get("bos_token")
            or special_token_text(tokenizer_config.get("bos_token")),
            eos_token=eos or "",
            tokenizer_config=tokenizer_config,
        )
        return meta, tokenizer_config

    def _describe(self, meta: dict[str, Any], tokenizer_config: dict[str, Any]) -> Model:
        limit = meta.get("context_length") or tokenizer_config.get("model_max_length") or 4096
        context_window = min(int(limit), 1 << 20)
        return Model(
            id=str(meta.get("model_id") or self.model_dir.name),
            provider="local",
            api="local",
            base_url=self.model_dir.resolve().as_uri(),
            name=str(meta.get("name") or self.model_dir.name),
            context_window=context_window,
            max_output=min(_DEFAULT_MAX_TOKENS, context_window),
            images=False,
        )

    @classmethod
    def default(
        cls,
        model_dir: str | Path | None = None,
        *,
        source: str | Path | None = None,
        progress: Progress | None = None,
        **kwargs: Any,
    ) -> LocalModel:
        """The default model (SmolLM2-135M-Instruct), downloaded and converted on first use."""
        from ._fetch import prepare_default_model

        path = prepare_default_model(model_dir, source=source, progress=progress or no_progress)
        return cls(path, **kwargs)

    def close(self) -> None:
        """Free the model's memory; streams started afterwards raise `RuntimeError`.

        Streams still running end within one token (queued ones with an error).
        """
        self._generator = None
        self._scheduler.shutdown(RuntimeError(f"{self.info.id} was closed"))
        _LIVE.discard(self)

    def __enter__(self) -> LocalModel:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _start(self) -> Start:
        return Start(api="local", provider="local", model=self.info.id)

    def _failed(self, error: Error) -> list[Event]:
        """A stream refused before generation (template error, prompt too long)."""
        return [self._start(), error]

    # -- prompt -----------------------------------------------------------
    def render_prompt(self, context: Context, options: Options | None = None) -> str:
        """The exact prompt text the model sees (useful when a template misbehaves)."""
        return self.template.render(context, options)

    def count_tokens(self, context: Context, options: Options | None = None) -> TokenCount:
        """How many tokens ``context`` is for this model: the prompt its chat template
        renders (tools and the assistant's opening included), through its own
        tokenizer, exactly what a stream of ``context`` would feed it. Raises
        `TemplateError` where the template refuses the conversation."""
        prompt = self.render_prompt(context, options)
        tokens = self._tokenizer.encode(prompt, add_special_tokens=False).tokens
        return TokenCount(
            input_tokens=len(tokens),
            model=self.info.id,
            provider=self.info.provider,
            source="the local model's tokenizer",
        )

    def _plan(self, context: Context, options: Options | None) -> _Plan | Error:
        options = options or Options()
        if options.response_schema is not None:
            return Error.invalid_request(
                "the local model has no constrained decoding for Options.response_schema; "
                "ask for JSON in the prompt and read it with parse_output(message, schema)"
            )
        try:
            prompt = self.render_prompt(context, options)
        except TemplateError as exc:
            return Error.invalid_request(str(exc))
        tokens = self._tokenizer.encode(prompt, add_special_tokens=False).tokens
        room = self.info.context_window - len(tokens)
        if room <= 0:
            return Error.context_overflow(
                f"the prompt is {len(tokens)} tokens; {self.info.id} holds {self.info.context_window}"
            )
        wanted = options.max_tokens if options.max_tokens is not None else self.info.max_output
        sampling = sampling_arguments(options, self._tokenizer.get_vocab_size())
        guard = repetition_guard(options.extra_body or {}, self._guard)
        if isinstance(guard, str):
            return Error.invalid_request(guard)
        sampling.update(guard)
        return _Plan(
            prompt=tokens,
            max_tokens=max(1, min(wanted, room)),
            sampling=sampling,
            seed=generator_seed(options),
            start_in_thinking=prompt.rstrip().endswith("<think>"),
            options=options,
        )

    def _submit(self, plan: _Plan, post: Callable[[Item], None]) -> _Job:
        if self._generator is None:
            raise RuntimeError(f"{self.info.id} was closed")
        job = _Job(plan, post, self._end_ids)
        self._scheduler.submit(job)
        return job

    def _generate(
        self,
        contexts: list[list[str]],
        *,
        max_length: int,
        sampling: dict[str, Any],
        seed: int | None,
        callback: Callable[[Any], bool],
    ) -> None:
        """One ``generate_batch`` call on a lane (`BatchScheduler` calls this, not users).

        Seeded sampling gets a freshly seeded generator (see ``_SEED_LOCK``).
        """
        generator = self._generator
        if generator is None:
            raise RuntimeError(f"{self.info.id} was closed")
        arguments: dict[str, Any] = {
            "max_length": max_length,
            "end_token": self._end_tokens,
            "include_prompt_in_result": False,
            "beam_size": 1,
            "callback": callback,
            **sampling,
        }
        if seed is None:
            generator.generate_batch(contexts, **arguments)
            return
        import ctranslate2

        del generator
        with _SEED_LOCK:
            ctranslate2.set_random_seed(seed)
            seeded = ctranslate2.Generator(str(self.model_dir), **self._generator_args)
            try:
                seeded.generate_batch(contexts, **arguments)
            finally:
                del seeded

    # -- streams ----------------------------------------------------------
    def generate(
        self, context: Context, options: Options | None, post: Callable[[Item], None]
    ) -> Generation:
        """Start one stream; the model's lane calls ``post`` with each item (see
        `Generation`). A request the model refuses (a template error, a prompt too
        long) starts nothing: its events come from `Generation.opening` and its last
        item is posted at once."""
        plan = self._plan(context, options)
        if isinstance(plan, Error):
            post(_END)
            return Generation(self._failed(plan), None, None, None)
        job = self._submit(plan, post)
        session = _Session(self, plan)
        return Generation(session.start(), session, job, self._scheduler)

    def stream_sync(
        self, context: Context, options: Options | None = None
    ) -> Generator[Event, None, None]:
        """Events as a plain iterator, for scripts; leaving the loop early stops generation.

        Wrap in `contextlib.closing` where the iterator may not be dropped at once
        (CPython closes it when the last reference goes). The event loops' flavours
        are in the shells (`streamfn.io_trio.stream_local`, `streamfn.io_asyncio.stream_local`).
        """
        items: queue.SimpleQueue[Item] = queue.SimpleQueue()
        generation = self.generate(context, options, items.put)
        try:
            yield from generation.opening()
            while not generation.finished:
                yield from generation.receive(items.get())
        finally:
            generation.close()


class Generation:
    """One stream of a `LocalModel`, for any thread or event loop: threads and a callback.

    `LocalModel.generate` starts it. The model's lane calls ``post(item)`` from
    its own thread with each generated token id, and once more with a last
    item (`streamfn.local._batching.is_last`) when it lets go of the stream.
    ``post`` must not block: it hands the item to the consumer (a queue,
    ``loop.call_soon_threadsafe``, ``TrioToken.run_sync_soon``). The consumer
    turns each item into events with `receive` until `finished`, and calls
    `stop` when it leaves early: the lane then stops within one token and
    posts its last item. No generation may outlive its stream, so a consumer
    waits for that last item before it returns (`close` does, for threads;
    an event loop's adapter awaits it).
    """

    def __init__(
        self,
        opening: list[Event],
        session: _Session | None,
        job: _Job | None,
        scheduler: BatchScheduler | None,
    ) -> None:
        self._opening = opening
        self._session = session
        self._job = job
        self._scheduler = scheduler

    def opening(self) -> list[Event]:
        """The events before any token (``Start``; for a refused request also its ``Error``)."""
        return self._opening

    @property
    def finished(self) -> bool:
        """Every event is out (the last item may still be on its way)."""
        return self._session is None or self._session.finished

    def receive(self, item: Item) -> list[Event]:
        """The events ``item`` makes; tells the lane to stop once the answer has ended."""
        if self._session is None or self._job is None:
            return []
        events = self._session.handle(item)
        if self._session.wants_stop:
            self._job.stop.set()
        return events

    def stop(self) -> None:
        """Ask the lane to let go (within one token; a queued stream at once). Does not wait."""
        if self._job is not None and self._scheduler is not None:
            self._scheduler.withdraw(self._job)

    def close(self) -> None:
        """`stop`, then block until the lane has let go: for a consumer on a thread."""
        self.stop()
        if self._job is not None:
            self._job.released.wait()
