"""Evaluation reports the registry tests compare: a base model, a clear gain, and a gain that breaks a domain."""

from __future__ import annotations

import pytest

from flywheel.evaluation.runner import EvalReport, TaskResult, aggregate
from flywheel.evaluation.suites import EvalConfig

CFG = EvalConfig(n_samples=2, n_boot=200)
GOOD, BAD, HALF = (True, True), (False, False), (True, False)


def _report(model: str, passes: dict[str, list[tuple[bool, bool]]]) -> EvalReport:
    """An EvalReport from per-domain per-task sample outcomes (what the runner would have scored)."""
    tasks = [TaskResult(f"{d}-{i}", d, p, 1.0, 10, 5, 1.0, 0.0)
             for d, ps in passes.items() for i, p in enumerate(ps)]
    return EvalReport(model, CFG, tasks, aggregate(tasks, CFG))


@pytest.fixture(scope="session")
def base_report() -> EvalReport:
    return _report("base", {"math": [HALF] * 6 + [BAD] * 4, "code": [HALF] * 4 + [BAD] * 2})


@pytest.fixture(scope="session")
def better_report() -> EvalReport:
    """Math improves, code unchanged."""
    return _report("cand", {"math": [GOOD] * 6 + [BAD] * 4, "code": [HALF] * 4 + [BAD] * 2})


@pytest.fixture(scope="session")
def regressed_report() -> EvalReport:
    """Better overall, but code collapses."""
    return _report("cand", {"math": [GOOD] * 10, "code": [BAD] * 6})
