"""Supervised fine-tuning lowers the loss on gold solutions."""

from __future__ import annotations


def test_sft_lowers_the_loss(tiny_model_dir):
    from flywheel.rollout.checkpoint import load_model
    from flywheel.tasks.suites import train_suite
    from flywheel.train.common.sft import SftConfig, supervised_finetune

    model, tok = load_model(tiny_model_dir, trainable=True)
    ex = [("math", t.prompt, t.solution) for t in train_suite("math", 8)]
    losses = supervised_finetune(model, tok, ex, SftConfig(steps=25, batch_size=8, lr=5e-3, warmup=2))
    assert losses[-1] < losses[0] * 0.8
