"""agent in RFT: the default run samples agent tasks, and a passing agent trajectory (worked plan and all) is
kept as a demonstration, judged by the real verifiers."""

from __future__ import annotations

from flywheel.environments.agent.plan import render_plan_trajectory
from flywheel.tasks.suites import train_suite
from flywheel.train.common.rollouts import default_score_fn
from flywheel.train.rft.config import RftConfig
from flywheel.train.rft.data import Candidate, RftCounts, choose_tasks, select_examples, verify


def test_default_rft_samples_agent_tasks():
    cfg = RftConfig()
    assert cfg.tasks_per_domain["agent"] > 0
    tasks = train_suite("math", 5) + train_suite("agent", 5)
    assert {t.domain for t in choose_tasks(tasks, cfg.tasks_per_domain, 0)} == {"math", "agent"}


def test_passing_agent_trajectories_are_kept():
    tasks = train_suite("agent", 4)
    plan = [render_plan_trajectory(t.reference["initial_state"], t.reference["goal"]) for t in tasks]
    cands = [Candidate(t, r, "policy") for t, r in zip(tasks, plan, strict=True)]
    cands += [Candidate(t, t.solution, "policy") for t in tasks]  # the direct gold too
    cands += [Candidate(tasks[0], "finish now", "policy")]  # no call: fails
    verify(cands, default_score_fn())
    counts = RftCounts()
    kept = select_examples(cands, 4, 0, counts)
    assert len(kept) == 8 and counts.by_domain["agent"]["passed"] == 8
    assert {e.response for e in kept} == {*plan, *(t.solution for t in tasks)}


def test_pool_first_takes_every_mined_task_before_replay():
    from flywheel.tasks.sources import tagged
    from flywheel.tasks.suites import train_suite

    pool, replay = tagged(train_suite("math", 30)[:10], "pool"), tagged(train_suite("math", 300)[30:], "replay")
    tasks = replay[:50] + pool + replay[50:]
    first = choose_tasks(tasks, {"math": 40}, 0, pool_first=True)
    assert len(first) == 40 and {t.task_id for t in pool} <= {t.task_id for t in first}
    mixed = choose_tasks(tasks, {"math": 40}, 0, pool_first=False)
    assert len(mixed) == 40 and len({t.task_id for t in pool} & {t.task_id for t in mixed}) < 10
    few = choose_tasks(tasks, {"math": 5}, 0, pool_first=True)
    assert {t.meta["source"] for t in few} == {"pool"}
