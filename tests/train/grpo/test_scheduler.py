"""The task scheduler: domain mix, difficulty preference, dynamic sampling with refill, persistence."""

from __future__ import annotations

from collections import Counter

import pytest

from flywheel.rollout.types import Rollout
from flywheel.tasks.suites import train_suite
from flywheel.train.grpo.scheduler import Group, TaskScheduler
from flywheel.verifiers.verdict import Verdict, VerifierInfraError


@pytest.fixture(scope="module")
def tasks():
    return train_suite("math", 60) + train_suite("code", 20) + train_suite("agent", 20)


def _group(task, passes):
    rs = [
        Rollout(prompt="", prompt_ids=[1], token_ids=[2], logprobs=[0.0], loss_mask=[1], text="", policy_version=0,
                verdict=Verdict(1.0 if p else 0.0, p, "x"))
        for p in passes
    ]
    return Group(task, rs)


def test_domain_weights_shape_the_mix(tasks):
    s = TaskScheduler(tasks, {"math": 0.8, "code": 0.1, "agent": 0.1}, seed=0)
    counts = Counter(t.domain for step in range(200) for t in s.sample(10, step))
    total = sum(counts.values())
    assert counts["math"] / total == pytest.approx(0.8, abs=0.04)
    assert counts["code"] / total == pytest.approx(0.1, abs=0.03)
    s2 = TaskScheduler(tasks, {"math": 1.0, "code": 0.0}, seed=0)
    assert {t.domain for t in s2.sample(20, 0)} == {"math"}


def test_sampling_is_deterministic_and_distinct(tasks):
    a = TaskScheduler(tasks, {"math": 1.0}, seed=3).sample(16, step=5)
    b = TaskScheduler(list(reversed(tasks)), {"math": 1.0}, seed=3).sample(16, step=5)
    assert [t.task_id for t in a] == [t.task_id for t in b]
    assert len({t.task_id for t in a}) == 16
    c = TaskScheduler(tasks, {"math": 1.0}, seed=4).sample(16, step=5)
    assert [t.task_id for t in a] != [t.task_id for t in c]


def test_difficulty_prefers_tasks_near_half(tasks):
    math_tasks = [t for t in tasks if t.domain == "math"]
    third = len(math_tasks) // 3
    rates = {t.task_id: 1.0 for t in math_tasks[:third]}
    rates.update({t.task_id: 0.0 for t in math_tasks[third : 2 * third]})
    rates.update({t.task_id: 0.5 for t in math_tasks[2 * third :]})
    s = TaskScheduler(tasks, {"math": 1.0}, seed=0, pass_rates=rates)
    assert s.task_weight(math_tasks[-1].task_id) == 1.0
    assert s.task_weight(math_tasks[0].task_id) == s.min_weight
    picked = Counter(rates[t.task_id] for step in range(100) for t in s.sample(5, step))
    assert picked[0.5] > 4 * max(picked[0.0], picked[1.0])
    assert picked[0.0] > 0 and picked[1.0] > 0  # backed off, not banned


def test_running_pass_rate_updates_and_persists(tasks):
    s = TaskScheduler(tasks, {"math": 1.0}, seed=0, momentum=0.5)
    tid = tasks[0].task_id
    s.update(tid, [True, True, False, False])
    assert s.pass_rate(tid) == 0.5
    s.update(tid, [True] * 4)
    assert s.pass_rate(tid) == 0.75
    s2 = TaskScheduler(tasks, {"math": 1.0}, seed=0)
    s2.load_state_dict(s.state_dict())
    assert s2.pass_rate(tid) == 0.75 and s2.attempts[tid] == 8


def test_dynamic_sampling_drops_flat_groups_and_refills(tasks):
    s = TaskScheduler(tasks, {"math": 1.0}, seed=0)
    solved = {t.task_id for i, t in enumerate(tasks) if t.domain == "math" and i % 3 == 0}

    def rollout_fn(batch):
        # one task in three is always solved (flat), the others are mixed (signal)
        return [_group(t, [True] * 4 if t.task_id in solved else [True, False, False, True]) for t in batch]

    kept, stats = s.collect(8, step=0, rollout_fn=rollout_fn, dynamic=True, max_refill_rounds=3)
    assert len(kept) == 8 and all(g.has_signal() for g in kept)
    assert stats.dropped_groups > 0 and stats.rounds >= 2 and stats.short_by == 0
    assert 0 < stats.dropped_share < 1
    # every generated group informed the pass rates, dropped ones included
    assert sum(1 for tid in s.pass_rates if tid in solved) == stats.dropped_groups
    kept2, stats2 = TaskScheduler(tasks, {"math": 1.0}, seed=0).collect(8, 0, rollout_fn, dynamic=False)
    assert len(kept2) == 8 and stats2.dropped_groups == 0 and stats2.rounds == 1


def test_dynamic_sampling_gives_up_after_refill_rounds(tasks):
    s = TaskScheduler(tasks, {"math": 1.0}, seed=0)
    kept, stats = s.collect(4, 0, lambda b: [_group(t, [False] * 4) for t in b], dynamic=True, max_refill_rounds=2)
    assert kept == [] and stats.rounds == 3 and stats.short_by == 4 and stats.dropped_share == 1.0


def test_non_finite_reward_is_an_infrastructure_error(tasks):
    g = _group(tasks[0], [True, False])
    g.rollouts[0].verdict = None  # a rollout that never got a verdict has no finite reward
    with pytest.raises(VerifierInfraError):
        g.has_signal()


def test_unknown_domains_rejected(tasks):
    with pytest.raises(ValueError):
        TaskScheduler(tasks, {"chemistry": 1.0})


def test_adaptive_prior_follows_the_domain_mean(tasks):
    s = TaskScheduler(tasks, {"math": 1.0}, seed=0, adaptive_prior=True)
    math_tasks = [t for t in tasks if t.domain == "math"]
    assert s.pass_rate(math_tasks[-1].task_id) == 0.5  # nothing seen yet: the fixed prior
    for t in math_tasks[:5]:
        s.update(t.task_id, [False] * 4)
    s.update(math_tasks[5].task_id, [True, False, False, False])
    unseen = math_tasks[-1].task_id
    assert s.pass_rate(unseen) == pytest.approx(1 / 24)
    # a weak model: the task with some success is preferred over fresh (probably hopeless) ones
    assert s.task_weight(math_tasks[5].task_id) > 5 * s.task_weight(unseen)
    s2 = TaskScheduler(tasks, {"math": 1.0}, seed=0, adaptive_prior=True)
    s2.load_state_dict(s.state_dict())
    assert s2.pass_rate(unseen) == s.pass_rate(unseen)
