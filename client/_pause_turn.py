"""The paused-turn stage: each paused turn continued by one more request, joined into one
stream (the bookkeeping, `PausedTurn`, and the rules: `streamfn.core.stages._pause_turn`).
"""

from __future__ import annotations

import logging

from streamfn.core import Context, Done, Error, Event, Model, Options, Start
from streamfn.core.stages._pause_turn import PausedTurn, continued_context, may_pause

from ._batches import Batches, OpenBatches

__all__ = ["continue_paused_turns"]

log = logging.getLogger("streamfn")


def continue_paused_turns(
    open_batches: OpenBatches, model: Model, context: Context, options: Options
) -> Batches:
    """``open_batches(model, context, options)``, with each paused turn continued by one
    more request, ``options.pause_turn_continuations`` times at most.

    Only a request the provider can pause (`may_pause`: one with a server tool, to a
    wire format whose providers pause) is watched: every other stream is returned as
    it is, without the cost of folding it.
    """
    if not may_pause(model, context, options):
        return open_batches(model, context, options)
    return _continued(open_batches, model, context, options, options.pause_turn_continuations)


async def _continued(
    open_batches: OpenBatches, model: Model, context: Context, options: Options, left: int
) -> Batches:
    turn = PausedTurn()
    asked = context  # every continuation sends this, plus the whole turn so far
    while True:
        batches = open_batches(model, context, options)
        continuing = False
        try:
            async for batch in batches:
                out: list[Event] = []
                for event in batch:
                    if isinstance(event, Start):
                        if turn.requests:
                            continue  # the caller has the first request's Start
                        turn.fold.add(event)
                        out.append(event)
                    elif isinstance(event, Done) and event.paused is True and left:
                        left -= 1
                        paused = turn.pause(event)
                        log.info(
                            "%s paused the turn; continuing it (request %d, %d more allowed)",
                            model.key,
                            turn.requests + 1,
                            left,
                        )
                        context = continued_context(asked, paused)
                        continuing = True
                        break
                    elif isinstance(event, (Done, Error)):
                        if isinstance(event, Done) and event.paused is True:
                            log.warning(
                                "%s paused the turn and it is not continued "
                                "(Options.pause_turn_continuations=%d reached); "
                                "Done.paused is set",
                                model.key,
                                options.pause_turn_continuations,
                            )
                        out.append(turn.billed(event))
                        yield out
                        return
                    else:
                        out.append(turn.shifted(event))
                if out:
                    yield out
                if continuing:
                    break
        finally:
            await batches.aclose()
        if not continuing:
            return
