"""The vLLM engine: a clear message without vLLM; generation and weight sync on a GPU."""

from __future__ import annotations

import pytest
import torch


def test_vllm_engine_without_vllm_says_how_to_get_it(tiny_model_dir):
    pytest.importorskip("torch")
    try:
        import vllm  # noqa: F401

        pytest.skip("vllm is installed here")
    except ImportError:
        pass
    from flywheel.rollout import build_engine

    with pytest.raises(RuntimeError, match=r"\[gpu\]"):
        build_engine("vllm", str(tiny_model_dir))


@pytest.mark.gpu
def test_vllm_engine_generates_and_syncs_weights(tiny_model_dir):
    from flywheel.rollout import build_engine, generate_for_tasks
    from flywheel.rollout.checkpoint import load_model
    from flywheel.rollout.types import SamplingParams
    from flywheel.tasks.suites import heldout_suite

    eng = build_engine("vllm", str(tiny_model_dir), dtype="float32", gpu_memory_utilization=0.2)
    tasks = heldout_suite("math", 2) + heldout_suite("agent", 2)
    sp = SamplingParams(temperature=0.0, max_new_tokens=24)
    before = generate_for_tasks(eng, tasks, 2, sp, max_steps=2)
    assert len(before) == 8 and all(len(r.token_ids) == len(r.logprobs) for r in before)
    model, _ = load_model(tiny_model_dir)
    new = {k: v + 0.05 * torch.randn_like(v) for k, v in model.state_dict().items()}
    eng.update_weights(new, version=3)
    after = generate_for_tasks(eng, tasks, 2, sp, max_steps=2)
    assert all(r.policy_version == 3 for r in after)
    assert [r.token_ids for r in before] != [r.token_ids for r in after]
