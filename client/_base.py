"""What every shell's client shares: configuration, the pool, the stream pipeline
(`client/_pipeline.py`) and the loop that performs `drive`'s steps.

A shell subclasses `ClientBase` with its I/O primitives only (open, send,
receive with a deadline, sleep, close, its clock) and says, in `Ambient`,
where its clients take the environment, randomness, the wall clock and TLS
settings from. Nothing here imports trio or asyncio, reads ``os.environ``,
``random`` or a clock, or builds an SSL context: the shell passes them in.
"""

from __future__ import annotations

import abc
import logging
import ssl
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from datetime import datetime
from typing import Any, ClassVar, Generic, NamedTuple, Self, TypedDict, TypeVar, Unpack

import msgspec

from streamfn.core import (
    AssistantMessage,
    Context,
    Error,
    Event,
    MissingCredentials,
    Model,
    Options,
    StreamError,
    TokenCount,
    TokenCountUnsupported,
    estimate_tokens,
    open_call,
    open_count,
    token_count,
    with_credentials,
)
from streamfn.core.http import (
    Answer,
    Connect,
    Emit,
    Exchange,
    Expired,
    PoolKey,
    Receive,
    Release,
    Send,
    Sleep,
    drive,
)
from streamfn.core.stages._fallback import FallbackModel

from ..core._call import Call, check_transport
from ..core._count import require_counting
from ..core.http._steps import ReceiveAnswer, SendAnswer
from ..core.stages._spend import SpendCap
from ._batches import Batches, flattened
from ._pipeline import CallOpener, Host, OpenStream, pipeline
from ._pool import ConnT, Pool, PooledConnection

__all__ = ["Ambient", "ClientBase", "ClientSettings"]

T = TypeVar("T")


class Ambient(NamedTuple):
    """What a shell's clients take from the process unless told otherwise.

    The core reads none of these itself: each shell names them once
    (``os.environ``, ``random.random``, ``datetime.now(UTC)``,
    ``ssl.create_default_context``) and a test may pass its own to a client.
    """

    environ: Mapping[str, str]
    rand: Callable[[], float]
    wall_clock: Callable[[], datetime]
    ssl_context: Callable[[], ssl.SSLContext]


class ClientSettings(TypedDict, total=False):
    """The keyword arguments of every shell's ``Client`` (all optional)."""

    ssl_context: ssl.SSLContext | None
    """TLS settings; default: the shell's (verification on, system CAs)."""
    environ: Mapping[str, str] | None
    """Where API keys and HTTPS_PROXY/NO_PROXY are read; default: the process environment."""
    max_idle_per_host: int
    """Idle keep-alive connections kept per host (default 8)."""
    logger: logging.Logger | None
    """Where retries and warnings are logged; default: the ``streamfn`` logger."""
    rand: Callable[[], float] | None
    """The retry jitter, in [0, 1); default: `random.random`."""
    wall_clock: Callable[[], datetime] | None
    """The UTC time, for request signing and Retry-After dates; default: the system clock."""


class ClientBase(Generic[ConnT], abc.ABC):
    """Configuration (`ClientSettings`), a keep-alive pool, and the loop that performs
    `drive`'s steps. Use ``async with Client() as client`` (or `aclose`) so idle
    sockets are closed with it.

    A shell subclasses this with its I/O primitives only (open, send,
    receive with a deadline, sleep, close, its clock); every shell runs this
    same loop (the blocking one runs it without an event loop, see
    `streamfn.io_sync`).
    """

    #: set by each shell: where its clients' defaults come from
    ambient: ClassVar[Ambient]

    def __init__(self, **settings: Unpack[ClientSettings]) -> None:
        ambient = self.ambient
        self._ssl_context = settings.get("ssl_context")
        environ = settings.get("environ")
        self.environ: Mapping[str, str] = ambient.environ if environ is None else environ
        self.log = settings.get("logger") or logging.getLogger("streamfn")
        self._rand = settings.get("rand") or ambient.rand
        self._wall_clock = settings.get("wall_clock") or ambient.wall_clock
        self._pool: Pool[ConnT] = Pool(settings.get("max_idle_per_host", 8))
        #: models found to need the Responses API (see `upgrade_to_responses`)
        self.responses_upgraded: set[tuple[str, str, str]] = set()

    @property
    def max_idle_per_host(self) -> int:
        return self._pool.max_idle_per_host

    @property
    def ssl_context(self) -> ssl.SSLContext:
        if self._ssl_context is None:
            self._ssl_context = self.ambient.ssl_context()
        return self._ssl_context

    @property
    def idle_connections(self) -> int:
        return len(self._pool)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close every idle connection."""
        for conn in self._pool.drain():
            await self._close(conn)

    def stream(
        self,
        model: Model,
        context: Context,
        options: Options | None = None,
        *,
        raise_on_error: bool = False,
    ) -> AbstractAsyncContextManager[AsyncIterator[Event]]:
        """``async with client.stream(m, ctx) as events: async for ev in events: ...``

        Leaving the block closes the connection unless the response was read to
        its end. A failure is the last event, an `Error` (a missing key too: an
        ``auth`` error naming the variable to set, before any connection);
        with ``raise_on_error=True`` it raises `StreamError` instead (see
        `streamfn.core.raise_for_error`), so a loop that only looks for text
        cannot end quietly on a failed call.
        """
        return self._stream(model, context, options or Options(), raise_on_error)

    def stream_batches(
        self, model: Model, context: Context, options: Options | None = None
    ) -> AbstractAsyncContextManager[AsyncIterator[list[Event]]]:
        """`stream`'s events as the lists each read decodes to (never an empty one):
        ``async with client.stream_batches(m, ctx) as batches: async for batch in batches``.

        The same events in the same order as `stream` (which is this, flattened),
        without a step per event: for a relay that sends each list in one write.
        """
        return self._batches(model, context, options or Options())

    async def complete(
        self,
        model: Model,
        context: Context,
        options: Options | None = None,
        *,
        raise_on_error: bool = True,
    ) -> AssistantMessage:
        """The whole answer as one message.

        A stream that ends in an `Error` raises `CompletionError` (its ``error``
        is the event, its ``message`` the partial answer); with
        ``raise_on_error=False`` the message is returned with ``error_message`` set.
        """
        from ..core._completion import finish_completion

        async with self.stream(model, context, options) as events:
            collected = [event async for event in events]
        return finish_completion(collected, raise_on_error=raise_on_error, options=options)

    async def count_tokens(
        self,
        model: Model,
        context: Context,
        options: Options | None = None,
        *,
        estimate: bool = False,
    ) -> TokenCount:
        """How many input tokens ``context`` is for ``model``, before sending it.

        Asked of the provider's counting endpoint (Anthropic, OpenAI, Gemini, Vertex
        AI, Bedrock) with the request `stream` would send, so system prompt, tools and
        attachments count; the local model counts with its own tokenizer. A provider
        without an endpoint raises `TokenCountUnsupported`, or with ``estimate=True``
        gives `estimate_tokens`'s rough figure, marked ``estimated``. Raises
        `StreamError` when the count call fails, with the `Error` a stream would end
        in (a missing key: kind ``auth``, naming the variable, before any connection). Counting is free at every
        provider that offers it; the request still counts against rate limits.
        """
        options = options or Options()
        if isinstance(model, FallbackModel):  # a chain counts with the model tried first
            model = model.models[0]
        if model.api == "local":
            from streamfn.local._provider import load_local

            local = await self._in_thread(load_local, model, self.environ)
            return local.count_tokens(context, options)
        try:
            require_counting(model)
        except TokenCountUnsupported:
            if estimate:
                return estimate_tokens(model, context)
            raise
        try:
            options = with_credentials(model, options, self.environ)
        except MissingCredentials as exc:  # the same failure as a refused key: kind auth
            raise StreamError(Error.auth(str(exc))) from None
        # ``transport="websocket"`` carries a Responses *turn*; the counting endpoint
        # (``/v1/responses/input_tokens``) is plain HTTP, so the options a caller streams
        # with count over HTTP (else the count would go out as a ``response.create``)
        # (and a count is free: no spending cap applies to it)
        options = msgspec.structs.replace(options, transport="http", max_cost=None)
        events: list[Event] = []
        async for batch in self._events(model, context, options, open_count):
            events += batch
        return token_count(events, model)

    # -- the I/O a shell provides ------------------------------------------------
    @abc.abstractmethod
    async def _in_thread(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)``, blocking work, off the event loop (the blocking shell calls it)."""

    @abc.abstractmethod
    def _clock(self) -> Callable[[], float]:
        """The event loop's clock, which every deadline is measured on."""

    @abc.abstractmethod
    async def _open(self, step: Connect) -> ConnT | Error | Expired:
        """A new connection, a connect `Error`, or `EXPIRED`."""

    @abc.abstractmethod
    async def _send(self, conn: ConnT, data: bytes, deadline: float) -> SendAnswer:
        """None when sent, the exception when the socket failed, or `EXPIRED`."""

    @abc.abstractmethod
    async def _receive(self, conn: ConnT, deadline: float) -> ReceiveAnswer:
        """Bytes (empty at EOF), the exception when the socket failed, or `EXPIRED`."""

    @abc.abstractmethod
    async def _sleep(self, seconds: float) -> None: ...

    async def _pause(self) -> None:
        """Let the shell's other work run (between slices of long checks)."""
        await self._sleep(0)

    @abc.abstractmethod
    async def _close(self, conn: ConnT) -> None:
        """Close at once, without waiting for the peer (cancellation, errors, abandon)."""

    @abc.abstractmethod
    async def _readable(self, conn: ConnT) -> bool:
        """Whether bytes or an end of stream wait to be read, without waiting for any.

        A zero-timeout readiness check (poll on the socket, or the event loop's
        own buffer); it may consume what it finds, as the connection is then
        closed anyway.
        """

    def _local_stream(
        self, model: Model, context: Context, options: Options
    ) -> AbstractAsyncContextManager[AsyncIterator[Event]]:
        """The local model's stream (``api="local"``) in this shell's flavour.

        Each shell loads the model with `streamfn.local._provider.load_local`
        (off its event loop) and opens the `LocalModel` stream that matches it.
        """
        raise NotImplementedError(f"{type(self).__name__} cannot run the local model")

    def _usable(self, conn: ConnT) -> bool:
        """Whether an idle connection may serve another request (shell-specific rules)."""
        return True

    # -- shared --------------------------------------------------------------------
    @asynccontextmanager
    async def _stream(
        self, model: Model, context: Context, options: Options, raise_on_error: bool = False
    ) -> AsyncIterator[AsyncIterator[Event]]:
        async with self._batches(model, context, options) as batches:
            events = flattened(batches)
            handed = _raising(events) if raise_on_error else events
            try:
                yield handed
            finally:
                if handed is not events:
                    await handed.aclose()
                await events.aclose()

    @asynccontextmanager
    async def _batches(
        self,
        model: Model,
        context: Context,
        options: Options,
        keep: Callable[[SpendCap | None], None] | None = None,
    ) -> AsyncIterator[Batches]:
        # one spending cap for every request the call makes (``Options.max_cost``); the
        # gateway ``keep``s it: its usage record reads the meters' count of the output
        spend = SpendCap.of(options)
        if keep is not None:
            keep(spend)
        batches = self._pipeline(spend)(model, context, options, open_call)
        try:
            yield batches
        finally:
            await batches.aclose()

    def _pipeline(self, spend: SpendCap | None = None) -> OpenStream:
        """This client's requests inside the stages of `STAGES` (`client/_pipeline.py`),
        each priced against ``spend``, the call's spending cap.

        Without a key the stream is the ``auth`` `Error` at once, before any connection.
        """
        host = Host(self.environ, self.responses_upgraded, self._clock, self._pause)

        def request(m: Model, c: Context, o: Options, call: CallOpener) -> Batches:
            return self._events(m, c, o, call, spend)

        return pipeline(host, request)

    def _events(
        self,
        model: Model,
        context: Context,
        options: Options,
        opener: Callable[[Model, Context, Options], Call] = open_call,
        spend: SpendCap | None = None,
    ) -> Batches:
        """One request's events, a list per read: over the wire (`_wire_events`), or
        from the local model, which has no wire (`_local_stream`) and costs nothing."""
        if model.api == "local":
            check_transport(model, options)
            return self._local_events(model, context, options)
        return self._wire_events(model, context, options, opener, spend)

    async def _local_events(self, model: Model, context: Context, options: Options) -> Batches:
        async with self._local_stream(model, context, options) as local:
            async for event in local:
                yield [event]

    async def _wire_events(
        self,
        model: Model,
        context: Context,
        options: Options,
        opener: Callable[[Model, Context, Options], Call],
        spend: SpendCap | None = None,
    ) -> Batches:
        """Perform the steps of `drive`, yielding each `Emit`'s events as one list; the
        connection in hand is closed on any exit."""
        steps = drive(
            model,
            context,
            options,
            environ=self.environ,
            clock=self._clock(),
            rand=self._rand,
            log=self.log,
            wall_clock=self._wall_clock,
            opener=opener,
            spend=spend,
        )
        conn: ConnT | None = None
        answer: Answer = None
        try:
            while True:
                try:
                    step = steps.send(answer)
                except StopIteration:
                    return
                answer = None
                if isinstance(step, Emit):
                    if step.events:
                        yield step.events
                elif isinstance(step, Receive):
                    assert conn is not None
                    answer = await self._receive(conn, step.deadline)
                elif isinstance(step, Send):
                    assert conn is not None
                    answer = await self._send(conn, step.data, step.deadline)
                elif isinstance(step, Connect):
                    conn = None if step.fresh else await self._take_idle(step.key)
                    if conn is not None:
                        answer = conn.last
                    else:
                        opened = await self._open(step)
                        if isinstance(opened, PooledConnection):
                            conn = opened
                        else:
                            answer = opened
                elif isinstance(step, Release):
                    assert conn is not None
                    held, conn = conn, None
                    await self._release(held, step.keep)
                elif isinstance(step, Sleep):
                    await self._sleep(step.seconds)
        finally:
            steps.close()
            if conn is not None:
                await self._close(conn)

    async def _take_idle(self, key: PoolKey) -> ConnT | None:
        """An idle connection that is still idle (see `Pool`); the others are closed."""
        for conn in self._pool.candidates(key):
            if conn.reusable and self._usable(conn) and not await self._readable(conn):
                return conn
            await self._close(conn)
        return None

    async def _release(self, conn: ConnT, keep: Exchange | None) -> None:
        """Back to the pool after a complete exchange; closed at once otherwise."""
        if not self._pool.put(conn, keep):
            await self._close(conn)


async def _raising(events: AsyncIterator[Event]) -> AsyncGenerator[Event, None]:
    """``events``, with an `Error` raised as `StreamError` instead of handed out."""
    from streamfn.core import raise_for_error

    async for event in events:
        raise_for_error(event)
        yield event
