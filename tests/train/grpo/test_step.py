"""A step with nothing to learn from: no update, but its lr is logged and the schedule moves on, so a
budgeted run's cosine still ends at its floor on the horizon's last step."""

from __future__ import annotations

import pytest
import torch

from flywheel.train.common.schedule import OptimSpec
from flywheel.train.common.torch_backend import TorchBackend
from flywheel.train.config import TrainConfig
from flywheel.train.grpo.scheduler import BatchStats
from flywheel.train.grpo.step import Batch, update_policy


def test_a_step_whose_groups_are_all_flat_logs_its_lr_and_advances_the_schedule():
    spec = OptimSpec(lr=1e-2, betas=(0.9, 0.99), weight_decay=0.0, max_grad_norm=1.0, warmup_steps=0, cosine=True,
                     horizon=4)
    backend = TorchBackend(torch.nn.Linear(2, 2), spec)
    before = [p.detach().clone() for p in backend.module.parameters()]
    empty = Batch(step=0, groups=[], all_groups=[], stats=BatchStats())
    lrs = [update_policy(TrainConfig(), backend, empty, None, 0) for _ in range(4)]
    assert all(m["update/skipped"] == 1.0 for m in lrs)
    assert [m["lr"] for m in lrs] == sorted((m["lr"] for m in lrs), reverse=True)  # the cosine decays
    assert lrs[-1]["lr"] == pytest.approx(0.1 * spec.lr)  # the floor after the horizon's last step
    assert all(torch.equal(a, b) for a, b in zip(before, backend.module.parameters(), strict=True))
