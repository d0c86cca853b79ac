"""Shared test setup: hypothesis profiles, and skips that say why (a failure under CI).

The corpus path lives in corpus_support; what a missing prerequisite does, in missing.py.
"""

from __future__ import annotations

import os
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from missing import fail_a_skip_under_ci, skip_reason

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


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    outcome = yield
    fail_a_skip_under_ci(outcome.get_result())


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Any:
    outcome = yield
    fail_a_skip_under_ci(outcome.get_result())


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Every skip, by reason, without ``-rs``: a test that did not run here says what
    it lacks (under CI a skip is a failure instead, see missing.py)."""
    reasons: dict[str, int] = {}
    for report in terminalreporter.stats.get("skipped", []):
        reason = skip_reason(report)
        reasons[reason] = reasons.get(reason, 0) + 1
    if reasons:
        total = sum(reasons.values())
        terminalreporter.write_sep("=", f"{total} tests did not run here (CI fails them)")
        for reason, count in sorted(reasons.items(), key=lambda item: -item[1]):
            terminalreporter.write_line(f"{count:4} skipped: {reason}", yellow=True)
