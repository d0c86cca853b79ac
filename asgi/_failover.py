"""One request across a served name's deployments: the pool's decisions, performed.

`streamfn.core.serve._deployments.Pool` decides (which deployment, which rest, in
what order); this awaits the upstream streams it names. A deployment that fails
before any output with a failure another try may fix hands the request to the
next one; once output began the stream is that deployment's to the end, a cut
answer included (the one rule of `streamfn.core.stages._try_again`). When every
deployment rests, the answer is a 429 with the Retry-After of the soonest
return, and no upstream request is made. The request's `Flight` names the
deployment tried last (the one that answered, or the last that failed), for
metrics and the usage record, and the ones that failed before it (``tried``): the
record keeps them, so a deployment's failed attempts show in the usage report.
"""

from __future__ import annotations

import logging
import math
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from typing import TypeVar

from streamfn.client._batches import first_answer, first_output
from streamfn.core import Error, Event, MissingCredentials, Start
from streamfn.core.serve._deployments import Pool

from ._observe import current_flight

__all__ = ["all_resting", "failover"]

log = logging.getLogger("streamfn")

T = TypeVar("T")

#: opens one deployment's stream (it may raise `MissingCredentials`: its key is unset)
OpenOne = Callable[[T], AbstractAsyncContextManager[AsyncIterator[list[Event]]]]


def all_resting(name: str, wait: float) -> Error:
    """The refusal when every deployment of ``name`` rests for ``wait`` more seconds."""
    seconds = max(1, math.ceil(wait))
    return Error.throttled(
        f"every deployment of {name!r} is cooling down after failures; retry in {seconds} s",
        retry_after=seconds,
    )


async def failover(
    pool: Pool[T], open_one: OpenOne[T], clock: Callable[[], float], name: str
) -> AsyncGenerator[list[Event], None]:
    """The answer of the first deployment that does not fail over, in ``pool``'s order."""
    order = pool.order(clock())
    if not order:
        yield [Start(), all_resting(name, pool.wait(clock()))]
        return
    failure: list[Event] = []
    missing: MissingCredentials | None = None
    flight = current_flight()
    for index in order:
        if not pool.healthy(index, clock()):  # rested meanwhile, by another request
            continue
        deployment = pool.deployments[index]
        try:
            opened = open_one(deployment.target)
        except MissingCredentials as exc:
            missing = missing or exc
            continue
        pool.began(index)
        if flight is not None:
            if flight.deployment is not None:  # the one before failed over
                flight.tried.append(flight.deployment)
            flight.deployment = deployment.label
        try:
            async with opened as batches:
                head = await first_answer(batches)
                failed = first_output(head)
                if isinstance(failed, Error) and pool.failed(index, failed, clock()):
                    log.warning(
                        "deployment %s of %s failed before any output (%s); next deployment",
                        deployment.label,
                        name,
                        failed.kind,
                    )
                    failure = head
                    continue
                if head:
                    yield head
                async for batch in batches:
                    if isinstance(batch[-1], Error):  # after output: rests it, moves nowhere
                        pool.failed(index, batch[-1], clock())
                    yield batch
                return
        finally:
            pool.ended(index)
    if failure:
        yield failure
    elif missing is not None:
        raise missing
    else:  # each healthy one rested meanwhile: the same refusal as when all rest
        yield [Start(), all_resting(name, pool.wait(clock()))]
