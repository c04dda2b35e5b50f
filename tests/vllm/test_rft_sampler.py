"""RFT's policy samples drawn by vLLM (the rollout-engine resource's sampler), then fine-tuned as usual."""

from __future__ import annotations

import pytest

from flywheel.tasks.suites import train_suite
from flywheel.train.rft.config import RftConfig
from flywheel.train.rft.run import run_rft
from flywheel.verifiers.verdict import Verdict
from flywheel_dagster.resources.rollout import RolloutEngineResource


def _any_text(domain: str, task: dict, response: str) -> Verdict:
    """Any non-empty answer passes: the test is about who samples, not about quality."""
    return Verdict(1.0 if response.strip() else 0.0, bool(response.strip()), "non-empty")


@pytest.mark.vllm
def test_rft_samples_with_vllm_and_fine_tunes(tiny_model_dir, tmp_path, require_vllm):
    """tiny-quick (SFT'd: its samples end) with a reward any finished answer earns."""
    tasks = train_suite("math", 6)
    cfg = RftConfig(tasks_per_domain={"math": 6}, samples_per_task=4, max_new_tokens=64, steps=1, batch_size=4,
                    include_logs=False)
    sampler = RolloutEngineResource(engine="vllm").sample_engine()
    result = run_rft(cfg, tiny_model_dir, tasks, tmp_path / "out", score_fn=_any_text, sample_engine=sampler)
    assert result.counts.sampled == 6 * 4 and result.counts.verified == 24
    assert result.counts.examples > 0 and len(result.losses) == 1
    assert (tmp_path / "out" / "model.safetensors").is_file()
