"""A response that does not stream: the fold of the events, or an HTTP error."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from streamfn.core import Done, Error, Event, Start
from streamfn.core.dialects._cut import CUT_STOP_REASONS, cut_error
from streamfn.core.dialects._request_fields import ClientRequest
from streamfn.core.serve._served import Served, final_body
from streamfn.core.serve._status import early_error, shutting_down_refusal

from ._messages import Send, send_json
from ._runtime import ABORTED, DISCONNECTED, Mailbox, Marker, batch_bytes, ended_early

if TYPE_CHECKING:
    from ._app import App

__all__ = ["send_whole"]

log = logging.getLogger("streamfn")


async def send_whole(
    app: App, send: Send, mailbox: Mailbox, served: Served, request: ClientRequest, held: list[int]
) -> None:
    """The whole answer once it is whole. Nothing is sent before, so a cut answer is an
    HTTP error, never a body that calls it complete. The events held for it are charged
    to the memory budget (``held``) until the request ends."""
    events: list[Event] = []
    while True:
        got = await mailbox.get(None)
        if got is DISCONNECTED:
            log.info("client disconnected; generation cancelled")
            return
        if got is ABORTED:
            raise shutting_down_refusal()
        assert not isinstance(got, Marker)
        batch: list[Event] = [ended_early()] if got is None else got
        app.budget.hold_answer(size := batch_bytes(batch))
        held[0] += size
        events += batch
        event = events[-1]
        if isinstance(event, Done) and event.stop_reason in CUT_STOP_REASONS:
            event = events[-1] = cut_error(event)  # a Done that says it did not finish
        if isinstance(event, Error):
            # nothing was sent yet: a cut answer is an HTTP error, never a body
            # that calls it complete (nor a tool call with repaired input)
            if not all(isinstance(e, Start) for e in events[:-1]):
                log.warning("answer cut after output began for %s: %s", served.path, event.message)
            raise early_error(served.dialect, event)
        if isinstance(event, Done):
            append = app.config.append_sources
            body = final_body(served, request, events, app.stamps, append=append)
            await send_json(send, 200, body)
            return
