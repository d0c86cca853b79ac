"""The local CTranslate2 model as a `streamfn serve` backend, on either shell.

``streamfn serve`` (this package, the composition root) hands it to the
server's `streamfn.asgi._backends.RouterBackend`: neither the server nor a
shell imports the local model, and the model knows nothing of the server.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any, Final

from streamfn.asgi import Runtime, UnknownModelError
from streamfn.asgi._backends import LOCAL_NAMES
from streamfn.asgi._runtime import Flag
from streamfn.core import (
    Context,
    Error,
    Event,
    Options,
    Start,
    TextContent,
    TokenCount,
    UserMessage,
)
from streamfn.io_asyncio import stream_local
from streamfn.local import LocalModel

__all__ = ["LocalBackend", "serving_runtime"]


class LocalBackend:
    """The local CTranslate2 model, loaded once and shared by all requests.

    The model's asyncio streams (`streamfn.io_asyncio._local`) run on an event
    loop of their own, in a thread: rendering the chat template and tokenizing a prompt of megabytes
    takes seconds of CPU, and on the server's loop it would freeze every
    other request and ``/health``. Events are relayed to the server's loop
    (asyncio's or trio's: the composition root passes its `Runtime`);
    cancelling the relay cancels the stream there (generation stops within a
    token, and its worker is joined before the relay returns).

    The tokenizer's ``encode`` holds the GIL while it works (seconds for a
    prompt of megabytes), so a thread alone does not keep the server
    responsive through a huge prompt: a long last message is first counted
    in slices, off the loop and mostly without the GIL, and a prompt that
    surely cannot fit is refused before the model renders and tokenizes it.
    """

    def __init__(
        self, model_dir: str | Path | None = None, *, runtime: Runtime, progress: Any = None
    ) -> None:
        """``runtime``: the serving loop's (events are relayed to it)."""
        self.runtime = runtime
        self.model = LocalModel.default(model_dir, progress=progress)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="streamfn-local-loop", daemon=True
        )
        self._thread.start()

    def list_models(self) -> list[str]:
        return list(LOCAL_NAMES)

    def max_output(self, model: str) -> int | None:
        if model not in LOCAL_NAMES:
            raise UnknownModelError(f"unknown local model {model!r}; use 'local'")
        return self.model.info.max_output

    async def count_tokens(self, model: str, context: Context, options: Options) -> TokenCount:
        """The prompt's tokens by the model's own tokenizer (off the loop)."""
        if model not in LOCAL_NAMES:
            raise UnknownModelError(f"unknown local model {model!r}; use 'local'")
        return await self.runtime.to_thread(self.model.count_tokens, context, options)

    def stream(
        self, model: str, context: Context, options: Options
    ) -> AbstractAsyncContextManager[AsyncIterator[Event]]:
        if model not in LOCAL_NAMES:
            raise UnknownModelError(f"unknown local model {model!r}; use 'local'")
        return self._stream(context, options)

    @contextlib.asynccontextmanager
    async def _stream(
        self, context: Context, options: Options
    ) -> AsyncIterator[AsyncIterator[Event]]:
        text = _last_user_text(context)
        if len(text) > _COUNT_ABOVE_BYTES:
            refusal = await self.runtime.to_thread(self._surely_too_long, text)
            if refusal is not None:
                start = Start(api="local", provider="local", model=self.model.info.id)
                async with _finished([start, refusal]) as events:
                    yield events
                return
        async with _on_loop(
            self._loop, self.runtime, lambda: stream_local(self.model, context, options)
        ) as events:
            yield events

    def _surely_too_long(self, text: str) -> Error | None:
        """A context overflow known from the last message alone (a worker thread).

        Every template renders the last user message, so its tokens are a
        floor on the prompt's. It is counted in slices cut before a space
        (where the tokenizer splits words anyway) with ``encode_batch``, which
        leaves the GIL free, and only until the count is surely too large:
        twice the window, for the odd token a cut may add.
        """
        tokenizer = getattr(self.model, "_tokenizer", None)
        if tokenizer is None:
            return None
        window = self.model.info.context_window
        counted = 0
        for piece in _slices(text, _SLICE_CHARS):
            counted += len(tokenizer.encode_batch([piece], add_special_tokens=False)[0])
            if counted > 2 * window + 64:
                return Error.context_overflow(
                    f"the prompt is more than {counted // 2} tokens; "
                    f"{self.model.info.id} holds {window}"
                )
        return None

    def close(self) -> None:
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join()
            self._loop.close()
        self.model.close()


def serving_runtime(shell: str) -> Runtime:
    """The serving loop's primitives (``--shell trio`` or asyncio's), which the local
    model's events are relayed to."""
    if shell == "trio":
        from streamfn.io_trio._server import TrioRuntime

        return TrioRuntime()
    from streamfn.io_asyncio._server import AsyncioRuntime

    return AsyncioRuntime()


#: last messages longer than this are counted before the model tokenizes them
_COUNT_ABOVE_BYTES: Final = 64 << 10
#: characters tokenized per call while counting
_SLICE_CHARS: Final = 16 << 10


def _last_user_text(context: Context) -> str:
    if not context.messages or not isinstance(context.messages[-1], UserMessage):
        return ""
    content = context.messages[-1].content
    if isinstance(content, str):
        return content
    return "".join(c.text for c in content if isinstance(c, TextContent))


def _slices(text: str, size: int) -> Iterator[str]:
    """``text`` in pieces of about ``size`` characters, each cut just before a space."""
    start = 0
    while start < len(text):
        end = start + size
        if end < len(text):
            space = text.rfind(" ", start + 1, end)
            end = space if space > start else end
        yield text[start:end]
        start = end


@contextlib.asynccontextmanager
async def _finished(events: list[Event]) -> AsyncIterator[AsyncIterator[Event]]:
    """A stream decided before it started (a refusal)."""

    async def replay() -> AsyncIterator[Event]:
        for event in events:
            yield event

    yield replay()


@contextlib.asynccontextmanager
async def _on_loop(
    loop: asyncio.AbstractEventLoop,
    here: Runtime,
    open_stream: Callable[[], AbstractAsyncContextManager[AsyncIterator[Event]]],
) -> AsyncIterator[AsyncIterator[Event]]:
    """Run a stream on ``loop`` (another thread's) and relay its events to ``here``."""
    call_here = here.from_thread()
    items: deque[Event | BaseException | None] = deque()
    arrived: list[Flag] = [here.flag()]
    finished = here.flag()

    def put(item: Event | BaseException | None) -> None:  # runs here
        items.append(item)
        arrived[0].set()

    def post(item: Event | BaseException | None) -> None:
        with contextlib.suppress(RuntimeError):  # the serving loop closed under a leaked stream
            call_here(lambda: put(item))

    async def pump() -> None:
        try:
            async with open_stream() as events:
                async for event in events:
                    post(event)
        except asyncio.CancelledError:
            pass
        except Exception as exc:  # the server turns it into the client's Error
            post(exc)
        finally:
            post(None)
            with contextlib.suppress(RuntimeError):
                call_here(finished.set)

    task: list[asyncio.Task[None]] = []
    loop.call_soon_threadsafe(lambda: task.append(loop.create_task(pump())))

    async def relay() -> AsyncIterator[Event]:
        while True:
            while not items:
                arrived[0] = here.flag()
                await arrived[0].wait()
            item = items.popleft()
            if item is None:
                return
            if isinstance(item, BaseException):
                raise item
            yield item

    try:
        yield relay()
    finally:
        loop.call_soon_threadsafe(lambda: task[0].cancel())
        await here.wait_shielded(finished)
