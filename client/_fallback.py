"""The fallback stage: a chain's models tried in order until one answers before failing.

The decision (which failures fall back, whether a chain can run) is pure and lives
in `streamfn.core.stages._fallback`; this is the stream that applies it.
"""

from __future__ import annotations

import logging

from streamfn.core import Context, Error, Event, MissingCredentials, Options
from streamfn.core.stages._fallback import FallbackModel, falls_back

from ..core._credentials import missing_key_events
from ._batches import Batches, OpenBatches, first_answer, first_output

__all__ = ["fall_back"]

log = logging.getLogger("streamfn")


async def fall_back(
    open_batches: OpenBatches, chain: FallbackModel, context: Context, options: Options
) -> Batches:
    """The first answer of ``chain``'s models that does not fail before output.

    ``open_batches(model, context, options)`` opens one model's stream (the
    shell resolves its credentials there and may raise `MissingCredentials`). When
    no model had a key, the stream is the missing key's ``Error(kind="auth")``.
    """
    missing: list[MissingCredentials] = []
    #: the answer of the last model that failed over, given if no later model answers
    failure: list[Event] = []
    for model in chain.models:
        try:
            batches = open_batches(model, context, options)
        except MissingCredentials as exc:
            log.warning("fallback: skipping %s: %s", model.key, exc)
            missing.append(exc)
            continue
        try:
            head = await first_answer(batches)
            failed = first_output(head)
            if isinstance(failed, Error) and falls_back(chain, failed):
                log.warning(
                    "fallback: %s failed before any output (%s: %s)",
                    model.key,
                    failed.kind,
                    failed.message,
                )
                failure = head
                continue
            if head:
                yield head
            async for batch in batches:
                yield batch
            return
        finally:
            await batches.aclose()
    if failure:  # every model that could be called failed over: the last one's error
        yield failure
        return
    if missing:
        none = MissingCredentials(
            "no model of the fallback chain has credentials: "
            + "; ".join(str(exc) for exc in missing)
        )
        yield missing_key_events(chain, none)
