"""`Environment.variants`: fresh training tasks of a mined task's own level, for the three built-in domains; a
logged prompt (no `meta`, production's rewording) still finds its level; never a held-out, production-suite
or test-level task; a plug-in without the hook has none."""

from __future__ import annotations

import dataclasses

import pytest

from flywheel.environments.agent import AgentEnvironment
from flywheel.environments.base import BaseEnvironment, is_heldout
from flywheel.environments.code import CodeEnvironment
from flywheel.environments.math import MathEnvironment
from flywheel.environments.math.tasks import make_math_task, math_level
from flywheel.tasks import world_suites

ENVS = {"math": MathEnvironment, "code": CodeEnvironment, "agent": AgentEnvironment}


def _logged(task):
    """The task as mining loads it from the logs: no meta (no level), the prompt as production reworded it."""
    prompt = "Question: " + task.prompt.lower() if task.domain == "math" else task.prompt
    return dataclasses.replace(task, prompt=prompt, meta={"source": "pool"})


@pytest.mark.parametrize("domain", sorted(ENVS))
def test_variants_share_the_level_are_fresh_train_tasks_and_are_deterministic(domain):
    env = ENVS[domain]()
    for level in (*env.levels_, *env.production_levels):
        mined = _logged(env.tasks(domain, "train", 3, 123, level=level)[0])
        got = env.variants(mined, 5, seed=0)
        assert got, (domain, level)
        assert [t.task_id for t in got] == [t.task_id for t in env.variants(mined, 5, seed=0)]
        assert all(env.task_level(t) == env.task_level(mined) for t in got)
        assert all(not is_heldout(t.prompt) and t.prompt != mined.prompt for t in got)
    # neither the production suite nor the test suite ever holds a variant
    mined = [_logged(t) for t in env.production_tasks(domain, "train", 40, 5)]
    ids = {v.task_id for t in mined for v in env.variants(t, 4, seed=1)}
    scored = {t.task_id for t in world_suites.production_suite(domain, 300)} | {t.task_id for t in world_suites.test_suite(domain, 300)}
    assert ids and not ids & scored


@pytest.mark.parametrize("domain", sorted(ENVS))
def test_a_test_level_or_unknown_task_has_no_variants(domain):
    env = ENVS[domain]()
    for t in env.test_tasks(domain, 10):
        assert env.variants(_logged(t), 3, seed=0) == []
    odd = dataclasses.replace(env.tasks(domain, "train", 1, 1)[0], prompt="hello", reference={}, meta={})
    assert env.variants(odd, 3, seed=0) == []


def test_math_level_reads_a_problem_in_any_production_wording():
    import random

    rng = random.Random(3)
    for level in range(1, 8):
        for _ in range(200):
            t = make_math_task(rng, level)
            for prompt in (t.prompt, "  " + t.prompt.lower().replace(". ", ".  "), "Question: " + t.prompt):
                got = math_level(prompt)
                assert got == level or (level in (1, 2) and got in (1, 2)) or (level == 7 and got is None)


def test_a_plugin_environment_has_no_variants_unless_it_opts_in():
    class Plugin(BaseEnvironment):
        name = version = family = "plug"

        def domains(self):
            return ["plug"]

        def tasks(self, domain, split, n, seed, level=None):
            return []

        def verify(self, task, response):
            raise NotImplementedError

    task = MathEnvironment().tasks("math", "train", 1, 1)[0]
    assert Plugin().variants(task, 5, seed=0) == []
