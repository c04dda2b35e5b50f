"""The agent's three distributions: SFT levels (one change first), production-only levels (drift by day) and
the frozen test levels, disjoint by construction; the SFT levels draw what tiny-v1 and tiny-v2 were built from."""

from __future__ import annotations

from flywheel.environments.agent import AgentEnvironment
from flywheel.environments.agent.tasks import LEVELS, PRODUCTION_LEVELS, SFT_LEVELS, TEST_LEVELS, task_level


def _prompts(tasks):
    return {t.prompt for t in tasks}


def test_levels_are_disjoint_by_construction():
    assert set(SFT_LEVELS).isdisjoint(PRODUCTION_LEVELS) and set(TEST_LEVELS).isdisjoint(
        {*SFT_LEVELS, *PRODUCTION_LEVELS})
    assert SFT_LEVELS[0] == 1 and LEVELS[1].changes == (1,)  # one change first
    shapes = [(c, k, spec.big) for spec in LEVELS.values() for c in spec.changes
              for k in range(spec.kept[0], spec.kept[1] + 1)]
    assert len(shapes) == len(set(shapes))  # (changes, items kept, big count) names exactly one level
    env = AgentEnvironment()
    for level in LEVELS:
        for t in env.suite(150, level, level, lambda t: True):  # the prompt alone says its level
            assert task_level(t.reference["initial_state"], t.reference["goal"]) == level


def test_sft_production_and_test_suites_do_not_share_a_prompt():
    env = AgentEnvironment()
    sft = _prompts(env.tasks("agent", "train", 3000, 1_000)) | _prompts(env.tasks("agent", "heldout", 600, 9_000))
    prod = env.production_tasks("agent", "heldout", 300, 19_000)
    prod_only = _prompts(t for t in prod if t.meta.get("level") in PRODUCTION_LEVELS)
    test = _prompts(env.test_tasks("agent", 200))
    assert prod_only and test and len(test) == 200
    assert not (sft & prod_only) and not (sft & test) and not (_prompts(prod) & test)
    assert {t.meta["level"] for t in env.test_tasks("agent", 50)} == set(TEST_LEVELS)


def test_production_drifts_by_day():
    env = AgentEnvironment()
    assert env.world_levels(0) == (*SFT_LEVELS, 4)
    assert env.world_levels(None) == (*SFT_LEVELS, *sorted(PRODUCTION_LEVELS))
    day0 = {t.meta.get("level") for t in env.production_tasks("agent", "train", 200, 5, day=0)}
    assert day0 == {1, 2, 3, 4}


def test_sft_levels_draw_the_stream_earlier_builds_saw():
    """The level-less train suite is a uniform mix of levels 1-3 with one, two, three changes (as before levels
    4-7 existed: a pinned prompt keeps the stream honest)."""
    env = AgentEnvironment()
    tasks = env.tasks("agent", "train", 300, 1_000)
    assert {t.meta["changes"] for t in tasks} == {1, 2, 3}
    assert tasks[0].prompt == FIRST_TRAIN_PROMPT


FIRST_TRAIN_PROMPT = "Inventory: nut=1, plum=7. Goal: nut=3, plum=3. Use the tools, then call finish."
"""The first agent train task before levels 4-7 existed (tiny-v1's and tiny-v2's SFT data starts here)."""
