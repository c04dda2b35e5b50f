"""The update backend the trainer drives, and the one place that picks it by name.

A backend owns the trainable model, its optimizer and LR scheduler; the trainer calls
`forward` / `backward` per micro-batch and `step` once per update, so the RL loop never
branches on the backend. `torch` (torch_backend.py) is the default; `deepspeed`
(deepspeed_backend.py) has the same methods with a ZeRO engine underneath.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

import torch

from flywheel.train.config import GRPOConfig
from flywheel.train.deepspeed_backend import DeepSpeedBackend
from flywheel.train.horizon import LRSchedule
from flywheel.train.torch_backend import TorchBackend


class UpdateBackend(Protocol):
    """What the trainer needs from a backend."""

    device: torch.device
    schedule: LRSchedule  # the LR multiplier; the trainer moves its `horizon` under a time budget

    @property
    def module(self) -> torch.nn.Module: ...

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor: ...

    def backward(self, loss: torch.Tensor) -> None: ...

    def step(self) -> float: ...

    def lr(self) -> float: ...

    def save(self, folder: Path) -> None: ...

    def load(self, folder: Path) -> None: ...


def make_backend(model: torch.nn.Module, cfg: GRPOConfig, device: str) -> UpdateBackend:
    """The backend `cfg.backend` names, owning `model` (deepspeed itself is imported only when chosen)."""
    if cfg.backend == "deepspeed":
        return DeepSpeedBackend(model, cfg, device)
    return TorchBackend(model, cfg, device)
