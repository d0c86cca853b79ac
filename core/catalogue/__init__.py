"""The model catalogue: what a model is, which models exist, and what each accepts.

The `Model` record and its prices, the registry and the ways to name a model, the
built-in catalogue generated from models.dev (``data/``) and the check every
catalogue passes, the settings of an unlisted model taken from its family, the
capability rules that fit a request's options to a model, and the one warning for a
deprecated model. Users import these names from `streamfn.core`; this package's
modules are private.
"""

__all__: list[str] = []
