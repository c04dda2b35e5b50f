"""How long a run is and which weights it keeps: the LR horizon shrinks to what a time budget reaches, the
best dev score's weights are the run's policy, patience stops it, and CPU runs use one torch thread."""

from __future__ import annotations

import pytest
import torch

from flywheel.tasks.suites import train_suite
from flywheel.train.common.taskset import dev_split
from flywheel.train.common.telemetry import Telemetry
from flywheel.train.config import TrainConfig
from flywheel.train.grpo.horizon import CHECKS, HorizonPlanner
from flywheel.train.grpo.trainer import RunInputs, train_rlvr
from flywheel.verifiers.verdict import Verdict

OFF = Telemetry(None, enabled=False)


def test_planner_shrinks_the_horizon_to_the_steps_the_budget_reaches_and_never_past_steps():
    p = HorizonPlanner(steps=100, budget_s=30.0, dev_every=10)
    for _ in range(CHECKS[0]):
        p.record_step(1.0)
    assert p.maybe_update(CHECKS[0], spent=3.0) == 30  # 27 s left at 1 s a step
    p.record_eval(5.0)  # a dev score costs 5 s, every 10 steps: 1.5 s a step, 5 s kept for the final score
    assert p.maybe_update(CHECKS[1], spent=8.0) == CHECKS[1] + int((30 - 8 - 5) / 1.5)
    fast = HorizonPlanner(steps=40, budget_s=1000.0)
    fast.record_step(0.1)
    assert fast.maybe_update(CHECKS[0], spent=0.3) == 40  # a generous budget: cfg.steps
    assert HorizonPlanner(steps=40, budget_s=0.0).maybe_update(CHECKS[0], 99.0) is None  # no budget, no estimate


def test_budgeted_run_shrinks_its_horizon_and_ends_there(flywheel_home, policy_dir, digit_reward):
    cfg = TrainConfig(steps=400, prompts_per_step=2, group_size=3, max_new_tokens=6, time_budget_s=4.0,
                     budget_clock="cpu", dev_every=0, domain_weights={"math": 1.0}, checkpoint_every=0)
    # 400 tasks: a fast CPU must reach its horizon before every task hits its sample cap ("exhausted")
    res = train_rlvr(cfg, RunInputs(policy_dir, train_suite("math", 400), flywheel_home, "budget"),
                     score_fn=digit_reward, telemetry=OFF)
    horizons = [h["lr/horizon"] for h in res.history]
    assert horizons[0] == 400 and res.horizon < 400 and horizons[-1] == res.horizon  # logged every step
    assert res.finished and res.stop_reason in ("horizon", "budget") and res.steps_done <= res.horizon
    if res.stop_reason == "horizon":  # the cosine really decayed: 10% of lr after the last step
        # the horizon may shrink once more at the last step, after its lr was set: within 2% of the floor
        assert res.steps_done == res.horizon and res.history[-1]["lr"] == pytest.approx(0.1 * cfg.lr, rel=0.02)


def test_best_dev_checkpoint_is_the_policy_and_patience_stops_the_run(flywheel_home, policy_dir, digit_reward):
    """Dev scores scripted through the score function (0, 1, 0, 0 for the evals after steps 1..4): the policy
    is the weights after step 2, not the last ones; patience 2 stops the run after step 4 of 8."""
    from flywheel.rollout.checkpoint import load_model

    tasks = train_suite("math", 20)
    dev = dev_split(["math"], 4, {t.task_id for t in tasks})
    dev_ids, calls = {t.task_id for t in dev}, []

    def score(domain: str, task: dict, response: str) -> Verdict:
        if task["task_id"] not in dev_ids:
            return digit_reward(domain, task, response)
        calls.append(task["task_id"])
        good = (len(calls) - 1) // len(dev_ids) == 1  # the second dev evaluation
        return Verdict(float(good), good, "scripted")

    model, tok = load_model(policy_dir, dtype="float32", trainable=True)
    snapshots = {}
    cfg = TrainConfig(steps=8, prompts_per_step=2, group_size=3, max_new_tokens=6, lr=5e-2, dev_every=1,
                     patience=2, domain_weights={"math": 1.0}, checkpoint_every=0)
    res = train_rlvr(cfg, RunInputs((model, tok), tasks, flywheel_home, "dev", dev_tasks=dev), score_fn=score,
                     telemetry=OFF,
                     on_step=lambda step, m: snapshots.__setitem__(step + 1, {k: v.detach().clone() for k, v in
                                                                             model.state_dict().items()}))
    assert [h["dev/score"] for h in res.history] == [0.0, 1.0, 0.0, 0.0]
    assert res.stop_reason == "early_stop" and res.steps_done == 4
    assert res.dev_best["step"] == 2 and res.dev_best["score"] == 1.0
    saved, _ = load_model(res.policy_dir, dtype="float32")
    got = saved.state_dict()
    assert all(torch.equal(got[k], snapshots[2][k]) for k in got)  # the best dev score's weights
    assert any(not torch.equal(got[k], snapshots[4][k]) for k in got)  # not the last step's


def test_cpu_run_uses_one_torch_thread_and_gives_the_setting_back(flywheel_home, policy_dir, digit_reward):
    before = torch.get_num_threads()
    cfg = TrainConfig(steps=1, prompts_per_step=2, group_size=3, max_new_tokens=6, device="cpu", dev_every=0,
                     domain_weights={"math": 1.0})
    assert cfg.num_threads == 0  # the default: auto
    res = train_rlvr(cfg, RunInputs(policy_dir, train_suite("math", 8), flywheel_home, "threads"),
                     score_fn=digit_reward, telemetry=OFF)
    assert res.manifest["torch_threads"] == 1 and torch.get_num_threads() == before
