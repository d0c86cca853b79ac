"""Where `streamfn serve` gets its events: the local model, upstream providers, or both.

Backends only open streams; the server owns framing, limits and
cancellation. Model names are the registry's ``provider:id`` keys, plus
``local`` (and the local model's own name) for the CTranslate2 model, plus
the names a gateway configuration gives its upstream models (`ServedModel`).
Where a request goes and with which key is decided here, from the server's
configuration; the client's options carry only generation knobs.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any, Final

import msgspec

from streamfn.core.credentials import MissingCredentials
from streamfn.core.events import Error, Event, Start
from streamfn.core.messages import Context, TextContent, UserMessage
from streamfn.core.models import Model, UnknownModel, get_model, list_models
from streamfn.core.options import Options, client_fields

from .client import Client
from .server import UnknownModelError

__all__ = ["LocalBackend", "ProviderBackend", "RouterBackend", "ServedModel"]


class ServedModel(msgspec.Struct, kw_only=True):
    """A model a gateway serves under its own name: the upstream, its key, its defaults.

    ``model`` says where the upstream is (provider, wire api, base URL,
    headers); ``api_key_env`` names the environment variable holding its key
    (None: the provider's usual variable, or no key); ``defaults`` are
    generation knobs a client's own values override.
    """

    name: str
    model: Model
    api_key_env: str | None = None
    defaults: Options = msgspec.field(default_factory=Options)


LOCAL_NAMES = ("local", "local:smollm2-135m-instruct", "smollm2-135m-instruct")


class ProviderBackend:
    """Any registered model, reached over HTTPS with keys from the environment."""

    def __init__(
        self,
        client: Client | None = None,
        environ: Mapping[str, str] | None = None,
        *,
        models: Iterable[Model] = (),
        served: Iterable[ServedModel] = (),
        registry: bool = True,
        base_urls: Mapping[str, str] | None = None,
    ) -> None:
        """``models`` are served by ``provider:id`` ahead of the registry's (a
        gateway's own vLLM box, a renamed deployment ...); ``served`` under
        their own names; ``registry`` False serves only those two.
        ``base_urls`` sends every model of a provider to another upstream."""
        self.environ = dict(os.environ if environ is None else environ)
        self.client = client or Client(environ=self.environ)
        self.models = {m.key: m for m in models}
        self.served = {s.name: s for s in served}
        self.registry = registry
        self.base_urls = dict(base_urls or {})

    async def aclose(self) -> None:
        """Close idle upstream connections (the server calls this at shutdown)."""
        await self.client.aclose()

    def list_models(self) -> list[str]:
        names = list(self.served) + list(self.models)
        if self.registry:
            names += [m.key for m in list_models() if m.key not in self.models]
        return names

    def _resolve(self, name: str) -> tuple[Model, ServedModel | None]:
        served = self.served.get(name)
        if served is not None:
            return served.model, served
        model = self.models.get(name)
        if model is None and self.registry:
            try:
                model = get_model(name)
            except UnknownModel as exc:
                raise UnknownModelError(str(exc)) from None
        if model is None:
            raise UnknownModelError(
                f"unknown model {name!r}; this server serves: {', '.join(self.list_models())}"
            )
        if model.api == "local":
            raise UnknownModelError(f"{name!r} is a local model; this server does not serve it")
        base_url = self.base_urls.get(model.provider)
        if base_url is not None:
            model = msgspec.structs.replace(model, base_url=base_url)
        return model, None

    def max_output(self, model: str) -> int | None:
        return self._resolve(model)[0].max_output

    def stream(
        self, model: str, context: Context, options: Options
    ) -> AbstractAsyncContextManager[AsyncIterator[Event]]:
        resolved, served = self._resolve(model)
        if served is not None:
            options = msgspec.structs.replace(served.defaults, **client_fields(options))
            if served.api_key_env:
                key = self.environ.get(served.api_key_env)
                if not key:
                    raise MissingCredentials(
                        f"{served.name} needs its key in ${served.api_key_env}"
                    )
                options = msgspec.structs.replace(options, api_key=key)
        return self.client.stream(resolved, context, options)


class LocalBackend:
    """The local CTranslate2 model, loaded once and shared by all requests.

    The model's asyncio streams run on an event loop of their own, in a
    thread: rendering the chat template and tokenizing a prompt of megabytes
    takes seconds of CPU, and on the server's loop it would freeze every
    other request and ``/health``. Events are relayed to the server's loop;
    cancelling the relay cancels the stream there (generation stops within a
    token, and its worker is joined before the relay returns).

    The tokenizer's ``encode`` holds the GIL while it works (seconds for a
    prompt of megabytes), so a thread alone does not keep the server
    responsive through a huge prompt: a long last message is first counted
    in slices, off the loop and mostly without the GIL, and a prompt that
    surely cannot fit is refused before the model renders and tokenizes it.
    """

    def __init__(self, model_dir: str | Path | None = None, *, progress: Any = None) -> None:
        from streamfn.local.model import LocalModel

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
            refusal = await asyncio.to_thread(self._surely_too_long, text)
            if refusal is not None:
                start = Start(api="local", provider="local", model=self.model.info.id)
                async with _finished([start, refusal]) as events:
                    yield events
                return
        async with _on_loop(
            self._loop, lambda: self.model.stream_asyncio(context, options)
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
    open_stream: Callable[[], AbstractAsyncContextManager[AsyncIterator[Event]]],
) -> AsyncIterator[AsyncIterator[Event]]:
    """Run a stream on ``loop`` (another thread's) and relay its events to this loop."""
    here = asyncio.get_running_loop()
    items: asyncio.Queue[Event | BaseException | None] = asyncio.Queue()
    finished = here.create_future()

    def post(item: Event | BaseException | None) -> None:
        with contextlib.suppress(RuntimeError):  # this loop closed under a leaked stream
            here.call_soon_threadsafe(items.put_nowait, item)

    def settle() -> None:
        if not finished.done():
            finished.set_result(None)

    def finish() -> None:
        with contextlib.suppress(RuntimeError):
            here.call_soon_threadsafe(settle)

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
            finish()

    task: list[asyncio.Task[None]] = []
    loop.call_soon_threadsafe(lambda: task.append(loop.create_task(pump())))

    async def relay() -> AsyncIterator[Event]:
        while True:
            item = await items.get()
            if item is None:
                return
            if isinstance(item, BaseException):
                raise item
            yield item

    try:
        yield relay()
    finally:
        loop.call_soon_threadsafe(lambda: task[0].cancel())
        await _wait_uncancellable(finished)


async def _wait_uncancellable(future: asyncio.Future[None]) -> None:
    """Wait for ``future`` even if cancelled meanwhile, then let the cancellation through."""
    cancelled = False
    while not future.done():
        try:
            await asyncio.shield(future)
        except asyncio.CancelledError:
            cancelled = True
    if cancelled:
        raise asyncio.CancelledError


class RouterBackend:
    """Local names to the local model, everything else to the providers."""

    def __init__(self, local: LocalBackend | None, providers: ProviderBackend | None) -> None:
        if local is None and providers is None:
            raise ValueError("a server needs a local model, upstream providers, or both")
        self.local = local
        self.providers = providers

    async def aclose(self) -> None:
        if self.providers is not None:
            await self.providers.aclose()

    def list_models(self) -> list[str]:
        names: list[str] = []
        if self.local is not None:
            names += self.local.list_models()
        if self.providers is not None:
            names += self.providers.list_models()
        return names

    def _route(self, model: str) -> LocalBackend | ProviderBackend:
        if model in LOCAL_NAMES:
            if self.local is None:
                raise UnknownModelError("this server was started without the local model")
            return self.local
        if self.providers is None:
            raise UnknownModelError(
                f"unknown model {model!r}: this server serves only the local model ('local')"
            )
        return self.providers

    def max_output(self, model: str) -> int | None:
        return self._route(model).max_output(model)

    def stream(
        self, model: str, context: Context, options: Options
    ) -> AbstractAsyncContextManager[AsyncIterator[Event]]:
        return self._route(model).stream(model, context, options)
