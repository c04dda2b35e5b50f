"""The update backend both stages drive, and the one place that picks it by name.

A backend owns the trainable model, its optimizer and LR scheduler (`flywheel.train.common.optim`);
GRPO's trainer calls `forward` / `backward` per micro-batch and `step` once per update, RFT's (and
the base model's) fine-tuning `lm_loss` / `backward` / `step`, so no loop branches on the backend.
`torch` (torch_backend.py) is the default; `deepspeed` (deepspeed_backend.py) has the same methods
with a ZeRO engine underneath.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

import torch

from flywheel.train.common.deepspeed_backend import DeepSpeedBackend
from flywheel.train.common.placement import Placement
from flywheel.train.common.schedule import LRSchedule, OptimSpec
from flywheel.train.common.torch_backend import TorchBackend


class UpdateBackend(Protocol):
    """What the training loops need from a backend."""

    device: torch.device
    schedule: LRSchedule  # the LR multiplier; the trainer moves its `horizon` under a time budget

    @property
    def module(self) -> torch.nn.Module: ...

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor: ...

    def lm_loss(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, labels: torch.Tensor) -> torch.Tensor: ...

    def backward(self, loss: torch.Tensor) -> None: ...

    def step(self) -> float: ...

    def skip(self) -> None:
        """Advance the LR schedule without an update: a step with nothing to learn from still counts
        toward the horizon the schedule decays over."""
        ...

    def lr(self) -> float: ...

    def save(self, folder: Path) -> None: ...

    def load(self, folder: Path) -> None: ...


def make_backend(model: torch.nn.Module, optim: OptimSpec, placement: Placement, micro_batch_size: int) -> UpdateBackend:
    """The backend `placement.backend` names, owning `model` on `placement.device` (resolved, not `auto`);
    deepspeed itself is imported only when chosen."""
    if placement.backend == "deepspeed":
        return DeepSpeedBackend(model, optim, placement, micro_batch_size)
    return TorchBackend(model, optim, placement.device)
