"""The module-level functions of the event-loop shells, written once.

``streamfn.io_trio`` and ``streamfn.io_asyncio`` each offer `stream`, `complete`,
`count_tokens` and `default_client` beside their `Client`; the four differ only in
which `Client` they create. Each shell makes one `ShellFunctions` with its own
client factory and exports its bound methods under those names, so the signatures
and the rules they document live here alone. The blocking shell's functions are
the same calls without ``await`` and stay in ``streamfn.io_sync``. A shell of your
own (a `ClientBase` subclass) offers the same four the same way.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any, Generic, TypeVar

from streamfn.core import AssistantMessage, Context, Event, Model, Options, TokenCount

from ._base import ClientBase

__all__ = ["ShellFunctions"]

AsyncC = TypeVar("AsyncC", bound=ClientBase[Any])


class ShellFunctions(Generic[AsyncC]):
    """`stream`, `complete`, `count_tokens` and `default_client` for one async shell."""

    __slots__ = ("_client", "_make")

    def __init__(self, make: Callable[[], AsyncC]) -> None:
        self._make = make
        self._client: AsyncC | None = None

    def default_client(self) -> AsyncC:
        """The client behind the module-level functions.

        It keeps no idle connections: it cannot know when the caller's event
        loop ends, and a pooled socket must not outlive it. Create a `Client`
        for keep-alive reuse.
        """
        if self._client is None:
            self._client = self._make()
        return self._client

    def stream(
        self,
        model: Model,
        context: Context,
        options: Options | None = None,
        *,
        raise_on_error: bool = False,
    ) -> AbstractAsyncContextManager[AsyncIterator[Event]]:
        """Stream one assistant turn: ``async with stream(m, ctx) as events: async for ev in events``.

        A failure is the last event, an `Error`; ``raise_on_error=True`` raises
        `StreamError` instead (see `ClientBase.stream`)."""
        return self.default_client().stream(model, context, options, raise_on_error=raise_on_error)

    async def complete(
        self,
        model: Model,
        context: Context,
        options: Options | None = None,
        *,
        raise_on_error: bool = True,
    ) -> AssistantMessage:
        """The whole assistant turn as one message; an `Error` raises `CompletionError`
        (``raise_on_error=False`` returns the message with ``error_message`` set)."""
        return await self.default_client().complete(
            model, context, options, raise_on_error=raise_on_error
        )

    async def count_tokens(
        self,
        model: Model,
        context: Context,
        options: Options | None = None,
        *,
        estimate: bool = False,
    ) -> TokenCount:
        """How many input tokens ``context`` is for ``model``, asked of the provider
        (the local model: its tokenizer); ``estimate=True`` accepts a marked estimate
        where the provider cannot count."""
        return await self.default_client().count_tokens(model, context, options, estimate=estimate)
