"""The recovery stage: one model's requests joined into one stream after a cut, as
``Options.recover`` asks (the bookkeeping and the next request: `streamfn.core.stages._recovery`).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Callable

from streamfn.core import Context, Error, Event, Model, Options, Splice, open_call, recovery_mode
from streamfn.core.stages._recovery import background, next_request

from ..core._call import Call
from ..core._options import RecoverMode
from ..core.providers import HTTPRequest

__all__ = ["EventsFor", "recovering"]

log = logging.getLogger("streamfn")

#: one request of a stream: ``(model, context, options, opener)`` -> its events
EventsFor = Callable[
    [Model, Context, Options, Callable[[Model, Context, Options], Call]],
    AsyncGenerator[list[Event], None],
]


def recovering(
    events_for: EventsFor, model: Model, context: Context, options: Options
) -> AsyncGenerator[list[Event], None]:
    """One model's stream, recovered after cuts as ``options.recover`` asks (see the
    module docstring). ``events_for(model, context, options, opener)`` performs one
    request, making its call with ``opener`` (`open_call` or a resumed call).
    Without recovery it is that one request's stream itself, nothing in between."""
    mode = recovery_mode(model, options)
    if mode is None:
        return events_for(model, context, options, open_call)
    return _recovered(events_for, mode, model, context, options)


async def _recovered(
    events_for: EventsFor, mode: RecoverMode, model: Model, context: Context, options: Options
) -> AsyncGenerator[list[Event], None]:
    splice = Splice(model, mode, options.max_recoveries)
    #: every new call made (a resumed call is no new one), with the request it was made for
    opened: list[tuple[Call, HTTPRequest]] = []

    def opener(m: Model, c: Context, o: Options) -> Call:
        call = open_call(m, c, o)
        opened.append((call, call.request))
        return call

    if mode == "resume":
        options = background(options)
    events = events_for(model, context, options, opener)
    while True:
        cut: Error | None = None
        try:
            async for batch in events:
                out: list[Event] = []
                for event in batch:
                    if isinstance(event, Error) and splice.recovers(event):
                        cut = event  # the last event of its stream
                        break
                    out += splice.admit(event)
                if out:
                    yield out
                if cut is not None:
                    break
        finally:
            await events.aclose()
        if cut is None:
            return
        following = next_request(splice, cut, opened[-1] if opened else None, context, options)
        if following is None:
            if admitted := splice.admit(cut):
                yield admitted
            return
        log.warning(
            "recover=%s: %s was cut after output (%s); recovery %d of at most %d",
            mode,
            model.key,
            cut.message,
            splice.recovered,
            splice.max_recoveries,
        )
        next_context, next_options, next_opener = following
        events = events_for(model, next_context, next_options, next_opener or opener)
