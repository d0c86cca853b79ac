"""The Responses upgrade stage: a request sent once more on the Responses API when the
provider says the model is served only there (the rule: `streamfn.core.stages._responses_upgrade`).
"""

from __future__ import annotations

import logging

from streamfn.core import Context, Error, Model, Options
from streamfn.core.stages._responses_upgrade import (
    UPGRADABLE_PROVIDERS,
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
    go there at once. Only an ``openai-chat`` model's first answer (the
    `Start` and the event after it, before the caller has seen anything) is
    inspected; everything else passes straight through.
    """
    eligible = model.api == "openai-chat" and model.provider in UPGRADABLE_PROVIDERS
    if eligible and upgrade_key(model) in upgraded:
        model = responses_model(model)
        eligible = False
    batches = open_batches(model, context, options)
    try:
        if eligible:
            head = await first_answer(batches)
            first = first_output(head)
            if isinstance(first, Error) and needs_responses_api(first):
                await batches.aclose()
                upgraded.add(upgrade_key(model))
                log.info("%s needs the Responses API; retrying there (remembered)", model.key)
                batches = open_batches(responses_model(model), context, options)
            elif head:
                yield head
        async for batch in batches:
            yield batch
    finally:
        await batches.aclose()
