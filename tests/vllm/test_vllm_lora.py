"""vLLM with a brought checkpoint and LoRA: prompts in the checkpoint's own template, adapter-only weight sync
(a LoRA request per policy version over the frozen base) sampling what the trainer's own weights sample."""

from __future__ import annotations

import pytest
import torch

from flywheel.tasks.suites import train_suite

pytestmark = pytest.mark.vllm


def test_vllm_samples_a_lora_policy_through_adapter_requests(qwen_checkpoint, require_vllm):
    from flywheel.rollout import generate_for_tasks
    from flywheel.rollout.checkpoint import load_model
    from flywheel.rollout.types import SamplingParams
    from flywheel.train.common.lora import LoraSpec, apply_lora
    from flywheel.train.common.rollouts import PolicyGenerator
    from flywheel.train.common.sft import SftConfig, supervised_finetune
    from flywheel.train.grpo.vllm_generator import VllmGenerator

    model, tok = load_model(qwen_checkpoint, trainable=True)
    model = apply_lora(model, LoraSpec(lora_rank=8), qwen_checkpoint)
    gen = VllmGenerator(model, tok, shared=False)
    try:
        tasks = train_suite("math", 3)
        rs = generate_for_tasks(gen.engine, tasks, 1, SamplingParams(temperature=0.0, max_new_tokens=4))
        assert [r.prompt for r in rs] == [tok.apply_chat_template(
            [{"role": "user", "content": t.prompt}], tokenize=False, add_generation_prompt=True) for t in tasks]
        supervised_finetune(model, tok, [("math", t.prompt, t.solution) for t in tasks],
                            SftConfig(steps=3, batch_size=2, lr=1e-2, warmup=0))
        model.eval()
        gen.sync(model, 1)  # the adapters alone, through a LoRA request
        assert gen.engine.lora_request is not None and gen.sync_ms and gen.engine.policy_version == 1
        sp = SamplingParams(temperature=0.0, max_new_tokens=6)
        got = gen.generate(tasks, 1, sp)
        want = PolicyGenerator(model, tok, shared=True).generate(tasks, 1, sp)
        assert [g[0].token_ids for g in got] == [g[0].token_ids for g in want]
        torch.testing.assert_close(torch.tensor(got[0][0].logprobs), torch.tensor(want[0][0].logprobs),
                                   atol=2e-3, rtol=2e-3)
    finally:
        gen.close()


def test_a_lora_policy_is_served_with_its_own_template_as_a_lora_module(qwen_checkpoint, tmp_path, require_vllm):
    import openai

    from flywheel.rollout.checkpoint import load_model
    from flywheel.serving.managed import start_model_server
    from flywheel.serving.vllm_server import stop_server
    from flywheel.train.common.lora import LoraSpec, apply_lora, write_adapter_info

    model, tok = load_model(qwen_checkpoint, trainable=True)
    policy = tmp_path / "policy"
    apply_lora(model, LoraSpec(lora_rank=8), qwen_checkpoint).save_pretrained(str(policy))
    tok.save_pretrained(str(policy))
    write_adapter_info(policy)
    info = start_model_server(policy, "flywheel-policy:1", "cpu", tmp_path / "vllm.log", max_model_len=512)
    try:
        client = openai.OpenAI(base_url=info.base_url, api_key="unused", timeout=60)
        assert {m.id for m in client.models.list().data} >= {"flywheel-policy:1", "flywheel-policy:1-base"}
        user = [{"role": "user", "content": "What is 2 + 3?"}]
        r = client.chat.completions.create(model="flywheel-policy:1", messages=user, max_tokens=4, temperature=0.0)
        want = tok(tok.apply_chat_template(user, tokenize=False, add_generation_prompt=True),
                   add_special_tokens=False)["input_ids"]
        assert r.usage.prompt_tokens == len(want)  # Qwen's template, not the project's
    finally:
        assert stop_server(info) == []
