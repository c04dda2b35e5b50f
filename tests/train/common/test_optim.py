"""The one optimizer and schedule: warmup then cosine to 10%, each stage's own values, and the base model's
SFT recipe hashing as before its loop's constants became config fields."""

from __future__ import annotations

import pytest
import torch

from flywheel.models.recipe import QUICK, TinyModelRecipe
from flywheel.train.common.optim import make_optimizer, make_scheduler
from flywheel.train.common.placement import PLACEMENT_FIELDS, Placement, placement_of
from flywheel.train.common.schedule import LRSchedule, OptimSpec
from flywheel.train.common.sft import SftConfig
from flywheel.train.config import TrainConfig
from flywheel.train.rft.config import RFT_RUN_FIELDS, RftConfig
from flywheel.train.rft.run import sft_config


def test_lr_schedule_decays_to_ten_percent_at_its_horizon():
    s = LRSchedule(warmup_steps=2, cosine=True, horizon=10)
    assert s(0) == 0.5 and s(2) == 1.0 and s(10) == pytest.approx(0.1)
    s.horizon = 6  # moved by a budget: the same decay over fewer steps
    assert s(6) == pytest.approx(0.1) and s(4) < LRSchedule(2, True, 10)(4)
    assert LRSchedule(0, False, 10)(7) == 1.0


def test_the_scheduler_sets_each_steps_lr_as_the_sft_loop_always_computed_it():
    """Warmup LRs are `peak * (step + 1) / warmup` (not `peak * ((step + 1) / warmup)`, one rounding apart for
    some steps), so the base model's build and RFT stay bitwise what they were."""
    spec = OptimSpec(lr=3e-3, betas=(0.9, 0.98), weight_decay=0.0, max_grad_norm=1.0, warmup_steps=30, cosine=True,
                     horizon=100)
    opt = make_optimizer(torch.nn.Linear(2, 2), spec)
    sched = make_scheduler(opt, spec)
    seen = []
    for _ in range(100):
        seen.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    assert seen[:30] == [3e-3 * (k + 1) / 30 for k in range(30)]
    assert seen[30] == 3e-3 and seen[-1] == pytest.approx(3e-3 * (0.1 + 0.9 * 0.5 * (1 + torch.cos(torch.tensor(
        torch.pi * 69 / 70)).item())))
    assert any(3e-3 * (k + 1) / 30 != 3e-3 * ((k + 1) / 30) for k in range(30))  # the order matters
    assert type(sched).state_dict(sched)["base_lrs"] == [3e-3]  # LambdaLR's state: old checkpoints resume


def test_each_stage_declares_its_own_optimizer_values():
    grpo, sft = TrainConfig().optim(), SftConfig().optim()
    assert grpo.betas == (0.9, 0.99) and sft.betas == (0.9, 0.98)
    assert (grpo.lr, grpo.warmup_steps, grpo.horizon) == (2e-4, 0, 120)
    rft = sft_config(RftConfig()).optim()
    assert (rft.lr, rft.warmup_steps, rft.horizon, rft.betas) == (1e-4, 5, 400, (0.9, 0.98))
    assert not TrainConfig(lr_schedule="constant").optim().cosine and rft.cosine


def test_both_stages_take_one_placement_and_refuse_what_cannot_run():
    for cls in (TrainConfig, RftConfig):
        assert {n: cls.__dataclass_fields__[n].metadata for n in PLACEMENT_FIELDS} == {
            n: Placement.__dataclass_fields__[n].metadata for n in PLACEMENT_FIELDS}
    assert set(PLACEMENT_FIELDS) <= set(RFT_RUN_FIELDS)  # the run's placement, not an RFT setting
    assert placement_of(TrainConfig(backend="deepspeed", zero_stage=2), "cpu") == Placement("deepspeed", 2, "cpu")
    for bad in ({"backend": "jax"}, {"zero_stage": 4}, {"device": "tpu"}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            TrainConfig(**bad)
        with pytest.raises(ValueError, match=next(iter(bad))):
            RftConfig(**bad)


def test_sft_config_hashes_as_before_its_constants_became_fields():
    assert set(SftConfig().to_dict()) == {"steps", "batch_size", "lr", "warmup", "weight_decay", "max_len", "seed"}
    assert SftConfig(adam_betas=(0.9, 0.95)).to_dict()["adam_betas"] == (0.9, 0.95)
    assert TinyModelRecipe(sft=SftConfig(max_grad_norm=0.5)).hash() != TinyModelRecipe().hash()
    assert QUICK.to_dict()["sft"] == {"steps": 40, "batch_size": 16, "lr": 5e-3, "warmup": 5, "weight_decay": 0.0,
                                      "max_len": 256, "seed": 0}
