"""The default update backend: plain torch AdamW, LR schedule, gradient clipping.

It implements `flywheel.train.backend.UpdateBackend`; the LR schedule and optimizer built
here are shared with the DeepSpeed backend, so both apply identical math.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from flywheel.train.config import GRPOConfig
from flywheel.train.horizon import LRSchedule


def lr_lambda(cfg: GRPOConfig) -> LRSchedule:
    """Linear warmup, then constant or cosine decay to 10% over `cfg.steps` updates (the horizon a time
    budget may shorten: `flywheel.train.horizon`)."""
    return LRSchedule(cfg.warmup_steps, cfg.lr_schedule == "cosine", cfg.steps)


def make_optimizer(model: torch.nn.Module, cfg: GRPOConfig) -> torch.optim.Optimizer:
    params = [p for p in model.parameters() if p.requires_grad]
    # foreach=False: the single-tensor path gives bitwise-identical updates across resume
    return torch.optim.AdamW(
        params, lr=cfg.lr, betas=tuple(cfg.adam_betas), weight_decay=cfg.weight_decay, eps=1e-8, foreach=False
    )


def logits_of(model: torch.nn.Module, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    out = model(input_ids=input_ids, attention_mask=attention_mask, use_cache=False)
    return out.logits if hasattr(out, "logits") else out[0]


class TorchBackend:
    """Single-process torch training on CPU or one GPU."""

    name = "torch"

    def __init__(self, model: torch.nn.Module, cfg: GRPOConfig, device: str = "cpu") -> None:
        self.device = torch.device(device)
        self.model = model.to(self.device)
        self.model.train()
        self.cfg = cfg
        self.optimizer = make_optimizer(self.model, cfg)
        self.schedule = lr_lambda(cfg)
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, self.schedule)

    @property
    def module(self) -> torch.nn.Module:
        return self.model

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        return logits_of(self.model, input_ids, attention_mask)

    def backward(self, loss: torch.Tensor) -> None:
        loss.backward()

    def step(self) -> float:
        """Clip, apply, advance the LR schedule, zero grads; returns the pre-clip grad norm."""
        params = [p for p in self.model.parameters() if p.requires_grad]
        if self.cfg.max_grad_norm > 0:
            norm = torch.nn.utils.clip_grad_norm_(params, self.cfg.max_grad_norm, foreach=False)
        else:
            grads = [p.grad.norm() for p in params if p.grad is not None]
            norm = torch.norm(torch.stack(grads)) if grads else torch.tensor(0.0)
        self.optimizer.step()
        self.scheduler.step()
        self.optimizer.zero_grad(set_to_none=True)
        return float(norm)

    def lr(self) -> float:
        return float(self.scheduler.get_last_lr()[0])

    def state_dict(self) -> dict[str, Any]:
        return {
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "lr_scheduler": self.scheduler.state_dict(),
        }

    def save(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        torch.save(self.state_dict(), folder / "backend.pt")

    def load(self, folder: Path) -> None:
        state = torch.load(folder / "backend.pt", map_location=self.device, weights_only=False)
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["lr_scheduler"])
