"""Resume after a crash gives bitwise the same weights as an uninterrupted run (same seed)."""

from __future__ import annotations

import pytest
import torch

from flywheel.tasks.suites import train_suite
from flywheel.train.common.checkpoint import latest_checkpoint
from flywheel.train.common.telemetry import Telemetry
from flywheel.train.config import TrainConfig
from flywheel.train.grpo.trainer import RunInputs, train_rlvr


@pytest.mark.parametrize("pipelined", [False, True], ids=["sync", "one-step-off-policy"])
def test_resume_is_bitwise_equal_to_uninterrupted(flywheel_home, policy_dir, digit_reward, pipelined):
    tasks = train_suite("math", 30)
    cfg = TrainConfig(steps=4, prompts_per_step=3, group_size=4, micro_batch_size=6, max_new_tokens=10, lr=1e-2,
                     checkpoint_every=2, off_policy_pipeline=pipelined, lr_schedule="cosine", warmup_steps=1,
                     num_threads=1)
    off = Telemetry(None, enabled=False)
    full = train_rlvr(cfg, RunInputs(policy_dir, tasks, flywheel_home, "full"), score_fn=digit_reward, telemetry=off)
    part = train_rlvr(cfg, RunInputs(policy_dir, tasks, flywheel_home, "crash"), score_fn=digit_reward,
                      telemetry=off, stop_after=2)  # the "crash": the process stops after step 2
    assert not part.finished and part.policy_dir is None
    assert latest_checkpoint(flywheel_home.checkpoints / "crash").name == "step_000002"
    resumed = train_rlvr(cfg, RunInputs(policy_dir, tasks, flywheel_home, "crash"), score_fn=digit_reward,
                         telemetry=off, resume=True)
    assert resumed.finished and resumed.steps_done == 4 and len(resumed.history) == 4
    a, b = full.model.state_dict(), resumed.model.state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a), "resumed weights differ from the uninterrupted run"
    assert [h["reward/mean"] for h in full.history] == [h["reward/mean"] for h in resumed.history]
    # and training did move the weights
    from transformers import AutoModelForCausalLM

    base = AutoModelForCausalLM.from_pretrained(policy_dir).state_dict()
    assert any(not torch.equal(base[k], a[k]) for k in a)


def test_checkpoint_holds_optimizer_rng_and_pass_rates(flywheel_home, policy_dir, digit_reward):
    cfg = TrainConfig(steps=1, prompts_per_step=2, group_size=3, max_new_tokens=8, num_threads=1)
    train_rlvr(cfg, RunInputs(policy_dir, train_suite("math", 10), flywheel_home, "one"),
               score_fn=digit_reward, telemetry=Telemetry(None, enabled=False))
    ck = latest_checkpoint(flywheel_home.checkpoints / "one")
    state = torch.load(ck / "trainer_state.pt", weights_only=False)
    assert state["step"] == 1 and {"python", "numpy", "torch"} <= set(state["rng"])
    assert state["scheduler"]["pass_rates"] and state["history"]
    backend = torch.load(ck / "backend.pt", weights_only=False)
    assert backend["optimizer"]["state"] and backend["lr_scheduler"]["last_epoch"] == 1
