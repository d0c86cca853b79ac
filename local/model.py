"""`LocalModel`: a CTranslate2 decoder streaming the same events as any provider.

Threads: CTranslate2 computes each token on its own worker thread and calls
back with the token id. The callback only hands the id to the consumer (a
queue, a trio channel or an asyncio queue) and checks a stop flag, so a
caller who breaks out or is cancelled stops generation within one token and
the worker is joined before the ``with`` block exits: no thread outlives its
stream. Token ids become bytes and the pure `TaggedDecoder` turns them into
events on the consumer side, exactly as a network shell feeds a provider.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import json
import math
import queue
import threading
import weakref
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from streamfn.core.events import Error, Event, Start, Usage
from streamfn.core.messages import Context
from streamfn.core.models import Model
from streamfn.core.options import Options
from streamfn.core.tagged import TaggedDecoder

from .cache import METADATA_FILE, TOKENIZER_FILE, Progress, no_progress
from .prompt import ChatTemplate, TemplateError
from .tokens import token_bytes_table

__all__ = ["LocalModel"]

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


class _End:
    """Sentinel: the generator returned."""


_END: Final = _End()
_Item = int | _End | BaseException


def read_json(path: Path) -> dict[str, Any]:
    """The object in an optional JSON file; ``{}`` when it is missing or not an object."""
    if not path.is_file():
        return {}
    return _json_object(path.read_text(encoding="utf-8"))


def _json_object(text: str) -> dict[str, Any]:
    value = json.loads(text)
    return value if isinstance(value, dict) else {}


def _read_vocabulary(model_dir: Path) -> list[str]:
    json_file = model_dir / "vocabulary.json"
    if json_file.is_file():
        return [str(t) for t in json.loads(json_file.read_text(encoding="utf-8"))]
    text_file = model_dir / "vocabulary.txt"
    return text_file.read_text(encoding="utf-8").split("\n")


@dataclass(frozen=True, slots=True)
class _Plan:
    """Everything one generation needs, decided before any thread starts."""

    prompt: list[str]
    max_tokens: int
    sampling: dict[str, Any]
    seed: int | None
    start_in_thinking: bool
    options: Options


class _Job:
    """One generation on CTranslate2's worker: posts token ids, stops on request.

    The job never holds the generator: CTranslate2 may keep the step callback
    alive, and a callback reaching its own generator would make a cycle the
    garbage collector cannot see.
    """

    def __init__(self, plan: _Plan, end_tokens: list[str], post: Callable[[_Item], None]) -> None:
        self.plan = plan
        self.end_tokens = end_tokens
        self.post = post
        self.stop = threading.Event()

    def run(self, generator: Any) -> None:
        try:
            generator.generate_batch(
                [self.plan.prompt],
                max_length=self.plan.max_tokens,
                end_token=self.end_tokens,
                include_prompt_in_result=False,
                beam_size=1,
                callback=self._on_step,
                **self.plan.sampling,
            )
        except BaseException as exc:  # delivered to the consumer, which reports an Error event
            self.post(exc)
        else:
            self.post(_END)

    def _on_step(self, step: Any) -> bool:
        if self.stop.is_set():
            return True
        self.post(int(step.token_id))
        return self.stop.is_set()


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

    def handle(self, item: _Item) -> list[Event]:
        if isinstance(item, int):
            self.generated += 1
            if item in self.model._end_ids:
                self.ended = True
                return []
            return self.decoder.receive_data(self.model._token_bytes[item])
        if isinstance(item, _End):
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

    ``compute_type="int8"`` with one intra-op thread is the measured sweet spot
    for small models on CPU (two threads were slower and degrade badly when the
    machine is busy). Concurrent streams on one model take turns.
    """

    def __init__(
        self,
        model_dir: str | Path,
        *,
        compute_type: str = "int8",
        intra_threads: int = 1,
        device: str = "cpu",
    ) -> None:
        import ctranslate2
        from tokenizers import Tokenizer

        self.model_dir = Path(model_dir)
        if not (self.model_dir / "model.bin").is_file():
            raise FileNotFoundError(
                f"{self.model_dir} is not a CTranslate2 model directory (no model.bin)"
            )
        self._generator_args: dict[str, Any] = {
            "device": device,
            "compute_type": compute_type,
            "intra_threads": intra_threads,
        }
        self._generator: Any = ctranslate2.Generator(str(self.model_dir), **self._generator_args)
        _LIVE.add(self)
        # tokenizer.json is megabytes: read it once for both the byte table and the tokenizer.
        tokenizer_text = (self.model_dir / TOKENIZER_FILE).read_text(encoding="utf-8")
        tokenizer_json = _json_object(tokenizer_text)
        self._tokenizer = Tokenizer.from_str(tokenizer_text)
        config = read_json(self.model_dir / "config.json")
        meta = read_json(self.model_dir / METADATA_FILE)
        tokenizer_config = read_json(self.model_dir / "tokenizer_config.json")
        vocabulary = _read_vocabulary(self.model_dir)
        self._token_bytes = token_bytes_table(vocabulary, tokenizer_json)
        ids = {token: i for i, token in enumerate(vocabulary)}
        eos = config.get("eos_token") or _token_text(tokenizer_config.get("eos_token"))
        end_tokens = meta.get("end_tokens") or [eos, "<|im_end|>", "<|endoftext|>", "<|eot_id|>"]
        self._end_tokens = [t for t in dict.fromkeys(end_tokens) if t and t in ids]
        self._end_ids = frozenset(ids[t] for t in self._end_tokens)
        self.template = ChatTemplate.from_model_dir(
            self.model_dir,
            bos_token=config.get("bos_token") or _token_text(tokenizer_config.get("bos_token")),
            eos_token=eos or "",
            tokenizer_config=tokenizer_config,
        )
        context_window = int(
            meta.get("context_length") or tokenizer_config.get("model_max_length") or 4096
        )
        context_window = min(context_window, 1 << 20)
        #: the model as the registry describes models (``provider="local"``, zero prices)
        self.info = Model(
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
        from .fetch import prepare_default_model

        path = prepare_default_model(model_dir, source=source, progress=progress or no_progress)
        return cls(path, **kwargs)

    def close(self) -> None:
        """Free the model's memory; streams started afterwards raise `RuntimeError`."""
        self._generator = None
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

    def _plan(self, context: Context, options: Options | None) -> _Plan | Error:
        options = options or Options()
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
        temperature = options.temperature or 0.0
        if temperature > 0:
            sampling: dict[str, Any] = {
                "sampling_temperature": temperature,
                "sampling_topk": options.top_k or 0,
                "sampling_topp": options.top_p if options.top_p is not None else 1.0,
            }
        else:
            sampling = {"sampling_topk": 1}
        return _Plan(
            prompt=tokens,
            max_tokens=max(1, min(wanted, room)),
            sampling=sampling,
            seed=options.seed if temperature > 0 else None,
            start_in_thinking=prompt.rstrip().endswith("<think>"),
            options=options,
        )

    def _job(self, plan: _Plan, post: Callable[[_Item], None]) -> _Job:
        if self._generator is None:
            raise RuntimeError(f"{self.info.id} was closed")
        return _Job(plan, self._end_tokens, post)

    def _run(self, job: _Job) -> None:
        """Worker-thread body: seeded sampling gets a freshly seeded generator (see _SEED_LOCK)."""
        if job.plan.seed is None:
            job.run(self._generator)
            return
        import ctranslate2

        with _SEED_LOCK:
            ctranslate2.set_random_seed(job.plan.seed)
            seeded = ctranslate2.Generator(str(self.model_dir), **self._generator_args)
            try:
                job.run(seeded)
            finally:
                del seeded

    # -- streams ----------------------------------------------------------
    def stream_sync(self, context: Context, options: Options | None = None) -> Iterator[Event]:
        """Events as a plain iterator, for scripts; leaving the loop early stops generation.

        Wrap in `contextlib.closing` where the iterator may not be dropped at once
        (CPython closes it when the last reference goes).
        """
        plan = self._plan(context, options)
        if isinstance(plan, Error):
            yield from self._failed(plan)
            return
        items: queue.SimpleQueue[_Item] = queue.SimpleQueue()
        job = self._job(plan, items.put)
        session = _Session(self, plan)
        worker = threading.Thread(target=self._run, args=(job,), name="streamfn-local", daemon=True)
        worker.start()
        try:
            yield from session.start()
            while not session.finished:
                events = session.handle(items.get())
                if session.wants_stop:
                    job.stop.set()
                yield from events
        finally:
            job.stop.set()
            worker.join()

    @contextlib.asynccontextmanager
    async def stream_trio(
        self, context: Context, options: Options | None = None
    ) -> AsyncIterator[AsyncIterator[Event]]:
        """``async with model.stream_trio(ctx) as events: async for event in events``."""
        import trio

        plan = self._plan(context, options)
        if isinstance(plan, Error):
            yield _Finished(self._failed(plan))
            return
        send, receive = trio.open_memory_channel[_Item](math.inf)
        token = trio.lowlevel.current_trio_token()

        def deliver(item: _Item) -> None:
            with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
                send.send_nowait(item)

        def post(item: _Item) -> None:
            with contextlib.suppress(trio.RunFinishedError):
                token.run_sync_soon(deliver, item)

        job = self._job(plan, post)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_trio_thread, self._run, job)
            try:
                async with receive:
                    yield _Events(_Session(self, plan), job, receive.receive)
            finally:
                job.stop.set()

    @contextlib.asynccontextmanager
    async def stream_asyncio(
        self, context: Context, options: Options | None = None
    ) -> AsyncIterator[AsyncIterator[Event]]:
        """``async with model.stream_asyncio(ctx) as events: async for event in events``."""
        plan = self._plan(context, options)
        if isinstance(plan, Error):
            yield _Finished(self._failed(plan))
            return
        loop = asyncio.get_running_loop()
        items: asyncio.Queue[_Item] = asyncio.Queue()

        def post(item: _Item) -> None:
            with contextlib.suppress(RuntimeError):  # the loop closed under a leaked stream
                loop.call_soon_threadsafe(items.put_nowait, item)

        job = self._job(plan, post)
        worker = asyncio.ensure_future(asyncio.to_thread(self._run, job))
        try:
            yield _Events(_Session(self, plan), job, items.get)
        finally:
            job.stop.set()
            await _join_uncancellable(worker)


async def _trio_thread(fn: Callable[[_Job], None], job: _Job) -> None:
    import trio

    # Not abandoned on cancel: the stop flag ends the thread within a token and we wait for it.
    await trio.to_thread.run_sync(fn, job, abandon_on_cancel=False)


async def _join_uncancellable(worker: asyncio.Future[None]) -> None:
    """Wait for the worker even if cancelled meanwhile, then let the cancellation through."""
    cancelled = False
    while not worker.done():
        try:
            await asyncio.shield(worker)
        except asyncio.CancelledError:
            cancelled = True
        except BaseException:
            break
    if cancelled:
        raise asyncio.CancelledError


class _Events:
    """The async iterator both async flavours yield; ``receive`` is the flavour's queue."""

    def __init__(self, session: _Session, job: _Job, receive: Callable[[], Any]) -> None:
        self._session = session
        self._job = job
        self._receive = receive
        self._ready: deque[Event] = deque(session.start())

    def __aiter__(self) -> _Events:
        return self

    async def __anext__(self) -> Event:
        while not self._ready:
            if self._session.finished:
                raise StopAsyncIteration
            self._ready.extend(self._session.handle(await self._receive()))
            if self._session.wants_stop:
                self._job.stop.set()
        return self._ready.popleft()


class _Finished:
    """The async iterator for a stream refused before generation (`LocalModel._failed`)."""

    def __init__(self, events: list[Event]) -> None:
        self._events = deque(events)

    def __aiter__(self) -> _Finished:
        return self

    async def __anext__(self) -> Event:
        if not self._events:
            raise StopAsyncIteration
        return self._events.popleft()


def _token_text(value: Any) -> str:
    """``tokenizer_config.json`` spells special tokens as strings or as AddedToken dicts."""
    if isinstance(value, dict):
        return str(value.get("content") or "")
    return str(value or "")
