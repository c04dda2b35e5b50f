"""DeepSpeed backend: one process on CPU (gloo), same update as the torch backend, for GRPO and for RFT's
fine-tuning alike; CUDA under `gpu`."""

from __future__ import annotations

import pytest

from flywheel.tasks.suites import train_suite
from flywheel.train.common.deepspeed_backend import ds_config
from flywheel.train.common.placement import Placement
from flywheel.train.common.telemetry import Telemetry
from flywheel.train.config import TrainConfig
from flywheel.train.grpo.trainer import RunInputs, train_rlvr


def test_ds_config_carries_zero_stage_and_clipping():
    cfg = TrainConfig(zero_stage=2, max_grad_norm=0.5, micro_batch_size=4)
    conf = ds_config(cfg.optim(), Placement(zero_stage=2, device="cpu"), cfg.micro_batch_size)
    assert conf["zero_optimization"]["stage"] == 2 and conf["gradient_clipping"] == 0.5
    assert conf["train_micro_batch_size_per_gpu"] == 4 and "bf16" not in conf


def _run(backend, policy_dir, home, score_fn, device="cpu"):
    cfg = TrainConfig(steps=2, prompts_per_step=3, group_size=4, micro_batch_size=5, max_new_tokens=10, lr=1e-2,
                     backend=backend, device=device, checkpoint_every=1, num_threads=1)
    return train_rlvr(cfg, RunInputs(policy_dir, train_suite("math", 20), home, backend),
                      score_fn=score_fn, telemetry=Telemetry(None, enabled=False))


def test_deepspeed_step_on_cpu_matches_torch_backend(flywheel_home, policy_dir, digit_reward, monkeypatch, tmp_path):
    # one process builds no op: the CPU comm backend's shared-memory all-reduce (a ~1 min JIT compile) is skipped
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path / "torch_extensions"))
    monkeypatch.setenv("DS_ACCELERATOR", "cpu")
    ds = _run("deepspeed", policy_dir, flywheel_home, digit_reward)
    assert not (tmp_path / "torch_extensions").exists()
    ref = _run("torch", policy_dir, flywheel_home, digit_reward)
    assert ds.finished and ds.history[0]["groups/kept"] > 0
    a, b = ds.model.state_dict(), ref.model.state_dict()
    moved = max(float((a[k].float() - b[k].float()).abs().max()) for k in a)
    assert moved < 1e-4, f"DeepSpeed and torch updates differ by {moved}"
    # the DeepSpeed checkpoint was written (engine format) and the policy saved HF-loadable
    assert (flywheel_home.checkpoints / "deepspeed" / "step_000002" / "deepspeed").is_dir()
    assert (ds.policy_dir / "config.json").exists()


def test_rft_fine_tunes_through_deepspeed_with_the_torch_backends_losses(policy_dir, digit_reward, monkeypatch,
                                                                       tmp_path):
    """`--backend deepspeed` reaches RFT: its fine-tuning builds a DeepSpeed engine (the real one, counted on the
    way in) and, in one CPU process, takes the torch backend's steps (the same losses and weights, a rounding apart)."""
    from flywheel.rollout.checkpoint import load_model
    from flywheel.train.rft.config import RftConfig
    from flywheel.train.rft.run import run_rft

    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path / "torch_extensions"))
    monkeypatch.setenv("DS_ACCELERATOR", "cpu")
    import deepspeed

    engines: list[dict] = []
    real = deepspeed.initialize
    monkeypatch.setattr(deepspeed, "initialize", lambda **kw: engines.append(kw["config"]) or real(**kw))
    cfg = RftConfig(tasks_per_domain={"math": 8}, samples_per_task=4, max_new_tokens=24, steps=3, batch_size=4,
                    lr=1e-3, warmup=1, device="cpu")
    # every finished response passes: a random policy's samples are the demonstrations
    passed = lambda domain, task, response: digit_reward(domain, task, "123" if response.strip() else "")  # noqa: E731
    ref = run_rft(cfg, policy_dir, train_suite("math", 8), tmp_path / "torch", score_fn=passed)
    ds = run_rft(cfg.replace(backend="deepspeed"), policy_dir, train_suite("math", 8), tmp_path / "ds",
                 score_fn=passed)
    assert ref.counts.examples > 0 and [e["train_micro_batch_size_per_gpu"] for e in engines] == [4]
    # the same losses to float rounding: on an AMD EPYC one of three differed in its 7th digit
    assert ds.losses == pytest.approx(ref.losses, rel=1e-6, abs=0) and len(ds.losses) == 3
    a, b = (load_model(r.output_dir)[0].state_dict() for r in (ds, ref))
    moved = max(float((a[k] - b[k]).abs().max()) for k in a)
    assert moved < 1e-6, f"DeepSpeed and torch fine-tuning differ by {moved}"  # its own clipping: rounding apart


@pytest.mark.gpu
def test_deepspeed_zero2_step_on_cuda(flywheel_home, policy_dir, digit_reward):
    cfg = TrainConfig(steps=1, prompts_per_step=2, group_size=4, max_new_tokens=10, backend="deepspeed", zero_stage=2,
                     device="cuda")
    res = train_rlvr(cfg, RunInputs(policy_dir, train_suite("math", 10), flywheel_home, "ds_cuda"),
                     score_fn=digit_reward, telemetry=Telemetry(None, enabled=False))
    assert res.finished and "gpu/mem_allocated_gb" in res.history[0]
