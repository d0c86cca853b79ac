"""The Responses upgrade stage: a request sent once more on the Responses API when the
provider says the model is served only there (the rule: `streamfn.core.stages._responses_upgrade`).
"""

from __future__ import annotations

import logging

from streamfn.core import Context, Error, Model, Options

from ..core.stages._responses_upgrade import (
    UpgradeKey,
    needs_responses_api,
    responses_model,
    upgrade_key,
)
from ._batches import Batches, OpenBatches, first_answer, first_output

__all__ = ["upgrade_to_responses"]

log = logging.getLogger("streamfn")


async def upgrade_to_responses(
    open_batches: OpenBatches,
    upgraded: set[UpgradeKey],
    model: Model,
    context: Context,
    options: Options,
) -> Batches:
    """``open_batches(model, ...)``, retried once on the Responses API when the provider says so.

    ``upgraded`` is the client's memory: models found to need the Responses API
    go there at once. Only the first answer (the `Start` and the event after it,
    before the caller has seen anything) of a model its format may upgrade
    (``WireFormat.upgrade``: Chat Completions at OpenAI or Azure) is inspected;
    everything else passes straight through.
    """
    target = responses_model(model)
    if target is not None and upgrade_key(model) in upgraded:
        model, target = target, None
    batches = open_batches(model, context, options)
    try:
        if target is not None:
            head = await first_answer(batches)
            first = first_output(head)
            if isinstance(first, Error) and needs_responses_api(first):
                await batches.aclose()
                upgraded.add(upgrade_key(model))
                log.info("%s needs the Responses API; retrying there (remembered)", model.key)
                batches = open_batches(target, context, options)
            elif head:
                yield head
        async for batch in batches:
            yield batch
    finally:
        await batches.aclose()
