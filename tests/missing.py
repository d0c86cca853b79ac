"""What a test needs and this machine lacks: a failure under CI, a visible skip elsewhere.

A test that cannot run where CI runs would pass CI without testing anything. So
under CI (``CI`` set to a true value, as CI sets it) every skip is a failure
(the conftest's report hook, `under_ci`); on a developer's machine a skip is
printed at the end of the run, by reason, without ``-rs``. A test whose
prerequisite is absent calls `missing`, so the reason says what is missing and
how to get it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import NoReturn

import pytest

#: how to get a Python module a test imports: the test extra has them all
PIP_HOW = "pip install -e '.[test]'"


def under_ci(environ: Mapping[str, str] = os.environ) -> bool:
    """True where CI runs the suite (``CI=true``): a skip there is a failure."""
    return environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


def missing(what: str, how: str) -> NoReturn:
    """Skip (a failure under CI): ``what`` is missing here; ``how`` gets it."""
    pytest.skip(f"{what} is missing: {how}", allow_module_level=True)


def skip_reason(report: pytest.TestReport | pytest.CollectReport) -> str:
    longrepr = report.longrepr
    reason = str(longrepr[2]) if isinstance(longrepr, tuple) else str(longrepr)
    return reason.removeprefix("Skipped: ")


def fail_a_skip_under_ci(
    report: pytest.TestReport | pytest.CollectReport, environ: Mapping[str, str] = os.environ
) -> None:
    """Under CI a skip is a failure: what a test lacks there, CI must provide."""
    if under_ci(environ) and report.skipped and not hasattr(report, "wasxfail"):
        report.outcome = "failed"
        report.longrepr = (
            f"skipped under CI: {skip_reason(report)}\n"
            "A test that cannot run where CI runs must not pass CI: give CI what the "
            "test needs (.ci/run), or make the test run without it."
        )
