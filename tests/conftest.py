"""Shared test setup: hypothesis profiles (the corpus path lives in corpus_support)."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

# Tests live in rooms (wire/, providers/, http/, shells/, serve/, local/, core/,
# fuzz/); what several rooms share lives beside this file as support modules
# (loopback_server, shell_runner, corpus_support, fake_provider, ...), which
# pytest makes importable because this conftest sits here. A test module imports
# only those and, within its own room, a sibling test module.

settings.register_profile(
    "ci", max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("dev", max_examples=50, deadline=None)
settings.register_profile(
    "long", max_examples=20_000, deadline=None, suppress_health_check=list(HealthCheck)
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))

# The tests measure the built-in model catalogue: whatever `streamfn models --refresh`
# cached on this machine (or STREAMFN_MODELS_FILE names) must not change them. Choosing
# here, with an empty cache, also keeps the shells from choosing on first lookup.
from streamfn.io_common._catalog_cache import load_user_catalog  # noqa: E402

load_user_catalog({"XDG_CACHE_HOME": os.path.join(os.sep, "nonexistent", "streamfn-tests")})
