"""GRPO with vLLM sampling the rollouts: the trainer's generator_factory seam, weights synced each step."""

from __future__ import annotations

import pytest
import torch

from flywheel.tasks.suites import train_suite
from flywheel.train.config import GRPOConfig
from flywheel.train.grpo.trainer import RunInputs, train_rlvr
from flywheel_dagster.resources.rollout import RolloutEngineResource

pytestmark = [pytest.mark.vllm, pytest.mark.usefixtures("require_vllm")]

CFG = GRPOConfig(steps=3, prompts_per_step=3, group_size=4, micro_batch_size=6, max_new_tokens=12, lr=1e-2,
                 domain_weights={"math": 0.8, "agent": 0.2}, max_tool_steps=2, num_threads=1, dev_every=0)


def test_the_resource_hands_the_trainer_a_vllm_generator_factory():
    assert RolloutEngineResource().generator_factory() is None  # torch: the trainer's own generator
    RolloutEngineResource(engine="vllm").check_trainable()  # vLLM imports here: training may choose it
    assert callable(RolloutEngineResource(engine="vllm").generator_factory())


def test_grpo_steps_sample_from_vllm_with_the_weights_synced(flywheel_home, policy_dir, digit_reward):
    from transformers import AutoModelForCausalLM

    built = []
    make = RolloutEngineResource(engine="vllm").generator_factory()

    def factory(*args, **kw):
        built.append(make(*args, **kw))
        return built[-1]

    tasks = train_suite("math", 30) + train_suite("agent", 6)
    before = AutoModelForCausalLM.from_pretrained(policy_dir).state_dict()
    res = train_rlvr(CFG, RunInputs(policy_dir, tasks, flywheel_home, "vllm-grpo"), score_fn=digit_reward,
                     generator_factory=factory)
    assert res.finished and res.steps_done == 3
    after = AutoModelForCausalLM.from_pretrained(res.policy_dir).state_dict()
    assert any(not torch.equal(before[k], after[k]) for k in before)
    (gen,) = built
    assert gen.engine.name == "vllm" and gen.engine.llm is None  # closed with the run
    assert gen.version == 2 and len(gen.sync_ms) == 3  # versions 0, 1, 2: every update reached vLLM
    assert not gen._dir.exists()  # the starting checkpoint it was built from is removed
    assert all(h["tokens_per_s/generate"] > 0 for h in res.history)
