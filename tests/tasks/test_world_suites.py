"""The three distributions (SFT, production, test) are disjoint by construction, production drifts by day,
and the evaluation suites are named apart in reports."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from flywheel.environments.math import MathEnvironment
from flywheel.evaluation.suites import EvalConfig, eval_tasks
from flywheel.tasks.suites import train_suite
from flywheel.tasks.world_suites import production_suite, suite_of, unit_name
from flywheel.tasks.world_suites import test_suite as frozen_suite

ROOT = Path(__file__).resolve().parents[2]


def _prompts(tasks):
    return {t.prompt for t in tasks}


def test_math_levels_are_disjoint_by_construction():
    env = MathEnvironment()
    sft = _prompts(env.tasks("math", "train", 3000, 1) + env.tasks("math", "heldout", 600, 2))
    prod_only = {lv: _prompts(env.tasks("math", "train", 800, 3, level=lv)) for lv in env.production_levels}
    test = _prompts(env.test_tasks("math", 800))
    assert all(prod_only.values()) and test
    for lv, ps in prod_only.items():
        assert not ps & sft, f"production level {lv} shares prompts with the SFT distribution"
        assert not ps & test
    assert not test & sft
    assert not set(env.test_levels) & {*env.levels_, *env.production_levels}


def test_test_levels_are_not_reachable_through_tasks():
    env = MathEnvironment()
    for lv in env.test_levels:
        with pytest.raises(ValueError, match="level must be one of"):
            env.tasks("math", "train", 5, 0, level=lv)


def test_production_drifts_and_its_heldout_is_disjoint_from_what_users_are_served():
    env = MathEnvironment()
    day0, later = env.world_levels(0), env.world_levels(None)
    assert set(day0) < set(later) and set(env.levels_) < set(day0)
    levels0 = {t.meta["level"] for t in production_suite("math", 300, split="train", day=0)}
    assert levels0 == set(day0)
    served = _prompts(production_suite("math", 2000, split="train"))
    heldout = _prompts(production_suite("math", 300))
    assert heldout and not heldout & served
    assert {t.meta["level"] for t in production_suite("math", 300)} == set(later)
    assert not _prompts(train_suite("math", 3000)) & {t.prompt for t in production_suite("math", 300)
                                                       if t.meta["level"] in env.production_levels}


def test_suites_are_prefix_stable_and_deterministic():
    a, b = production_suite("math", 60), production_suite("math", 120)
    assert [t.task_id for t in a] == [t.task_id for t in b[:60]]
    assert [t.task_id for t in frozen_suite("math", 30)] == [t.task_id for t in frozen_suite("math", 60)[:30]]


def test_eval_units_are_named_by_suite():
    cfg = EvalConfig(tasks_per_domain={"math": 10, "code": 4, "agent": 4}, test_tasks=5, production_tasks=7,
                     suites=("heldout", "production", "test"))
    units = eval_tasks(cfg)
    assert {"math", "production/math", "test/math"} <= set(units)
    assert len(units["test/math"]) == 5 and len(units["production/math"]) == 7 and len(units["math"]) == 10
    assert not any(u.startswith("test/") for u in eval_tasks(EvalConfig(tasks_per_domain={"math": 10})))
    assert unit_name("heldout", "math") == "math" and suite_of("production/math") == "production"
    assert suite_of("math") == "heldout" and suite_of("rg.gcd") == "heldout"
    only = eval_tasks(EvalConfig(tasks_per_domain={"math": 10}, suites=("heldout",)))
    assert set(only) == {"math"}


TEST_SUITE_READERS = {"flywheel/tasks/world_suites.py", "flywheel/evaluation/suites.py", "flywheel/mining/pool.py"}
"""The only library modules that may name the test suite's task source: the suites themselves, the
evaluation that reports them, and mining's decontamination (which only removes its prompts from training).
No training, traffic, recipe or gate code does."""


def test_no_training_or_gate_path_reads_the_test_suite():
    readers = set()
    for path in (ROOT / "flywheel").rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.ImportFrom):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.Attribute):
                names = [node.attr]
            if {"test_suite", "test_tasks", "suite_tasks", "TEST_SEED"} & set(names):
                readers.add(path.relative_to(ROOT).as_posix())
    allowed = TEST_SUITE_READERS | {"flywheel/environments/suite.py"}  # where test_tasks is defined
    assert readers <= allowed, f"modules reading the frozen test suite: {sorted(readers - allowed)}"


def test_a_domain_without_a_production_shift_has_no_production_suite():
    """A plug-in without production-only levels would only repeat its held-out suite: evaluation leaves it out."""
    from flywheel.tasks.world_suites import has_production_shift, suite_tasks

    assert has_production_shift("math") and has_production_shift("code") and has_production_shift("agent")
    assert not has_production_shift("rg.gcd") and suite_tasks("production", "rg.gcd", 5) == []
    units = eval_tasks(EvalConfig(tasks_per_domain={"math": 2}, domain_tasks={"rg.gcd": 2}))
    assert set(units) == {"math", "rg.gcd", "production/math"}
