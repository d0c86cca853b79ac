"""Shared test setup: hypothesis profiles (the corpus path lives in corpus_support)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from hypothesis import HealthCheck, settings

# Tests live in rooms (wire/, providers/, http/, shells/, serve/, local/, core/,
# fuzz/); a few share helpers across rooms (the loopback `Server` of
# serve/test_server.py, `run` of shells/test_shells.py), so every room is importable.
_HERE = Path(__file__).resolve().parent
sys.path[:0] = [
    str(room)
    for room in sorted(_HERE.iterdir())
    if room.is_dir() and any(room.glob("test_*.py")) and str(room) not in sys.path
]

settings.register_profile(
    "ci", max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("dev", max_examples=50, deadline=None)
settings.register_profile(
    "long", max_examples=20_000, deadline=None, suppress_health_check=list(HealthCheck)
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))
