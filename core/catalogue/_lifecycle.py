"""The one warning for a model its provider has deprecated, when a call is opened for it.

A deprecated model still answers until its provider retires it; then every call
fails with a bare 404. Users copy old ids from blog posts, so streamfn says so
before that day comes: the first call opened for a deprecated model (`Model.deprecated`,
set from the catalogue: models.dev's ``status`` and the end-of-life dates of
Anthropic's SDK table) logs one warning on the ``streamfn`` logger naming the
model, its end-of-life date when the data has one, and where the fact comes
from. A model its provider has already retired (`Model.retired`, from the dates
Anthropic's model deprecations page states) gets a warning of its own: it has
been retired, on that date, and calls to it fail. Neither source names a successor, so the warning suggests none: it points
to ``streamfn models``. The core reads no clock: the warning states the date, it
does not say whether it has passed. Once per model per process.
"""

from __future__ import annotations

import logging

from ._model_spec import Model

__all__ = ["deprecation_warning", "warn_if_deprecated"]

log = logging.getLogger("streamfn")

#: models already warned about (``provider:id``)
_WARNED: set[str] = set()


def deprecation_warning(found: Model) -> str:
    """The warning's text: the model, its end-of-life date when known, and the source."""
    source = f" (per {found.deprecation_source})" if found.deprecation_source else ""
    if found.retired:
        # the source states the retirement as done: no clock is needed to say so
        on = f" on {found.end_of_life}" if found.end_of_life else ""
        return (
            f"{found.key} has been retired by its provider{on}{source}; calls to it "
            f"fail: choose a current model (streamfn models --provider {found.provider} "
            "--current lists them)"
        )
    when = (
        f"it reaches end of life on {found.end_of_life}"
        if found.end_of_life
        else "the data gives no end-of-life date"
    )
    return (
        f"{found.key} is deprecated by its provider{source}; {when}. Calls to it fail "
        f"once it is retired: choose a current model (streamfn models --provider "
        f"{found.provider} --current lists them)"
    )


def warn_if_deprecated(found: Model) -> None:
    """Log `deprecation_warning` the first time a call is opened for a deprecated model."""
    if found.deprecated and found.key not in _WARNED:
        _WARNED.add(found.key)
        log.warning("%s", deprecation_warning(found))
