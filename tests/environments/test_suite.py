"""`SuiteEnvironment.tasks`: a draw is remembered and smaller ones are its prefix, which is only right because
every built-in suite is prefix-stable and deterministic (checked here against fresh environments)."""

from __future__ import annotations

import pytest

from flywheel.environments.agent import AgentEnvironment
from flywheel.environments.code import CodeEnvironment
from flywheel.environments.math import MathEnvironment


@pytest.mark.parametrize("env_cls", [MathEnvironment, CodeEnvironment, AgentEnvironment])
@pytest.mark.parametrize("split", ["train", "heldout"])
def test_a_smaller_draw_is_the_prefix_a_fresh_environment_would_draw(env_cls, split):
    env = env_cls()
    big = env.tasks(env.name, split, 240, 5)
    for n in (1, 60, 239):
        served, fresh = env.tasks(env.name, split, n, 5), env_cls().tasks(env.name, split, n, 5)
        assert [t.task_id for t in served] == [t.task_id for t in fresh] == [t.task_id for t in big[:n]]
    other = env.tasks(env.name, split, 60, 6)  # another seed is another draw
    assert [t.task_id for t in other] == [t.task_id for t in env_cls().tasks(env.name, split, 60, 6)]
    level = env.levels_[-1] if env.levels_ else None
    assert [t.task_id for t in env.tasks(env.name, split, 30, 5, level)] == \
        [t.task_id for t in env_cls().tasks(env.name, split, 30, 5, level)]


def test_asking_past_the_whole_split_searches_it_once(monkeypatch):
    env = CodeEnvironment()
    searches = []
    real = env.suite
    monkeypatch.setattr(env, "suite", lambda *a: searches.append(a[0]) or real(*a))
    everything = env.tasks("code", "train", 4000, 1)
    assert 0 < len(everything) < 4000  # the code train split is smaller than that
    again = env.tasks("code", "train", 9000, 1)
    assert searches == [4000] and [t.task_id for t in again] == [t.task_id for t in everything]
    served = env.tasks("code", "train", 100, 1)
    served.clear()  # a caller's list is its own
    assert len(env.tasks("code", "train", 100, 1)) == 100
