"""Code levels: SFT (1-2), production-only (3-5, drifting in over world days) and the frozen test suite (6)
are disjoint; level 1 is the suite tiny-v1 and tiny-v2 were taught, byte for byte; the held-out suite is
at least 200 tasks; every family's gold passes in the sandbox and a wrong answer fails."""

from __future__ import annotations

import hashlib
import json
import random

import pytest

from flywheel.environments.code import CodeEnvironment
from flywheel.environments.code.production import difficulty, respond, run_code
from flywheel.environments.code.sft_families import SFT2
from flywheel.environments.code.shifted import SHIFTED
from flywheel.environments.code.tasks import (
    FAMILIES,
    PRODUCTION_LEVELS,
    SFT_LEVELS,
    TEST_LEVELS,
    family_task,
    make_code_task,
)
from flywheel.environments.task import Task
from flywheel.tasks.suites import heldout_suite
from flywheel.verifiers.registry import VerifierRegistry

ENV = CodeEnvironment()

LEVEL1_SHA = "97b4d89371df7468"
"""`tasks("code", "train", 400, 1000, level=1)` (ids, prompts, references, solutions, meta) before levels
existed: the data tiny-v1 and tiny-v2 were trained on."""


def _sha(tasks: list[Task]) -> str:
    rows = [(t.task_id, t.prompt, t.reference, t.solution, t.meta) for t in tasks]
    return hashlib.sha256(json.dumps(rows).encode()).hexdigest()[:16]


def _prompts(level: int, n: int = 3000, seed: int = 0) -> set[str]:
    rng = random.Random(seed)
    return {make_code_task(rng, level).prompt for _ in range(n)}


def test_level_one_is_the_suite_the_tiny_models_were_taught():
    assert _sha(ENV.tasks("code", "train", 400, 1_000, level=1)) == LEVEL1_SHA
    assert all("level" not in t.meta for t in ENV.tasks("code", "heldout", 30, 5, level=1))


def test_sft_production_and_test_levels_are_disjoint():
    assert ENV.levels("code") == SFT_LEVELS and set(ENV.production_levels) == set(PRODUCTION_LEVELS)
    by_level = {lv: _prompts(lv) for lv in (*SFT_LEVELS, *PRODUCTION_LEVELS, *TEST_LEVELS)}
    levels = sorted(by_level)
    for i, a in enumerate(levels):
        for b in levels[i + 1:]:
            assert not by_level[a] & by_level[b], (a, b)
    sft = set().union(*(by_level[lv] for lv in SFT_LEVELS))
    served = ENV.production_tasks("code", "train", 600, 3)
    prod = {t.prompt for t in served if t.meta.get("level", 1) in PRODUCTION_LEVELS}
    assert len(prod) > 200 and not prod & sft
    test = {t.prompt for t in ENV.test_tasks("code", 200)}
    assert len(test) == 200 and not test & (sft | prod)


def test_heldout_suite_has_at_least_200_tasks_over_both_sft_levels():
    tasks = heldout_suite("code")
    assert ENV.heldout_size("code") >= 200 and len(tasks) == ENV.heldout_size("code")
    assert {t.meta.get("level", 1) for t in tasks} == set(SFT_LEVELS)
    assert not {t.task_id for t in tasks} & {t.task_id for t in ENV.tasks("code", "train", 2000, 1_000)}


def test_world_levels_drift_and_the_test_levels_stay_out_of_reach():
    assert ENV.world_levels(0) == (1, 2, 3)
    assert ENV.world_levels(1) == (1, 2, 3, 4)
    assert ENV.world_levels(2) == ENV.world_levels(None) == (1, 2, 3, 4, 5)
    day0 = {t.meta.get("level", 1) for t in ENV.production_tasks("code", "train", 300, 5, day=0)}
    assert day0 == {1, 2, 3}
    later = {t.meta.get("level", 1) for t in ENV.production_tasks("code", "heldout", 300, 5, day=2)}
    assert later == {1, 2, 3, 4, 5}
    assert {t.meta["level"] for t in ENV.test_tasks("code", 50)} == set(TEST_LEVELS)
    for lv in TEST_LEVELS:
        with pytest.raises(ValueError, match="level must be one of"):
            ENV.tasks("code", "train", 1, 0, level=lv)


def _one_per_family() -> list[Task]:
    """A task of every family past level 1."""
    return [family_task(fam, random.Random(7), level) for level, fams in ((2, SFT2), *SHIFTED.items())
            for fam in dict.fromkeys(fams)]


def test_every_new_family_passes_its_gold_and_fails_a_wrong_answer(sandbox_pool):
    tasks = _one_per_family()
    assert len({t.meta["family"] for t in tasks}) == len(tasks) == len(SFT2) + len(set().union(*SHIFTED.values()))
    env = CodeEnvironment(verifiers=VerifierRegistry(sandbox=sandbox_pool, code_timeout_s=2.0))
    for t in tasks:
        for c in env.validation(t):
            if c.kind == "hack":
                continue  # the hack probes are the same for every family: tests/environments/test_builtin.py
            v = env.verify(t, c.response)
            assert v.passed == c.expect_pass, (t.meta["family"], c.name, v.reason)
    hacks = [c for c in env.validation(tasks[-1]) if c.kind == "hack" and not c.slow]
    assert hacks and not any(env.verify(tasks[-1], c.response).passed for c in hacks)


def test_every_drawn_gold_passes_its_asserts_and_none_fails_them():
    """Over many draws of every level past 1 (the shifted levels rewrite every SFT family), run here."""
    rng = random.Random(3)
    for level in (2, *PRODUCTION_LEVELS, *TEST_LEVELS):
        for _ in range(600):
            t = make_code_task(rng, level)
            ref = t.reference
            assert run_code(t.prompt, ref["canonical_solution"], ref["test"], ref["entry_point"]).error is None
            assert run_code(t.prompt, "    return None\n", ref["test"], ref["entry_point"]).error is not None


def test_production_answers_for_every_level():
    rng = random.Random(1)
    for level in (1, *SFT_LEVELS, *PRODUCTION_LEVELS):
        for _ in range(20):
            t = make_code_task(rng, level)
            header, entry, test = t.prompt, t.reference["entry_point"], t.reference["test"]
            msgs, out = respond(t, "success", rng)
            assert msgs[0]["content"] == t.solution and out["tests"]["run"] == out["tests"]["passed"] > 0
            msgs, out = respond(t, "wrong_answer", rng)
            body = msgs[0]["content"].removeprefix(f"```python\n{header}").removesuffix("```")
            assert out["error"] and run_code(header, body, test, entry).error is not None
            msgs, out = respond(t, "runtime_error", rng)
            assert out["error"] and out["tests"]["passed"] < out["tests"]["run"]
    mean = {lv: sum(difficulty(make_code_task(rng, lv)) for _ in range(50)) / 50 for lv in (1, 2, *PRODUCTION_LEVELS)}
    assert list(mean.values()) == sorted(mean.values())  # production's own levels are its weakness


def test_level_one_families_are_untouched():
    assert len(FAMILIES) == 10
