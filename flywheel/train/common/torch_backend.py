"""The default update backend: plain torch AdamW, LR schedule, gradient clipping.

It implements `flywheel.train.common.backend.UpdateBackend`; the optimizer and LR schedule come
from `flywheel.train.common.optim`, shared with the DeepSpeed backend, so both apply identical math.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from flywheel.train.common.optim import make_optimizer, make_scheduler
from flywheel.train.common.schedule import OptimSpec


def logits_of(model: torch.nn.Module, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    out = model(input_ids=input_ids, attention_mask=attention_mask, use_cache=False)
    return out.logits if hasattr(out, "logits") else out[0]


def lm_loss_of(model: torch.nn.Module, input_ids: torch.Tensor, attention_mask: torch.Tensor,
               labels: torch.Tensor) -> torch.Tensor:
    """The causal-LM loss the model itself computes (`labels` -100 where no loss is taken)."""
    return model(input_ids=input_ids, attention_mask=attention_mask, labels=labels).loss


class TorchBackend:
    """Single-process torch training on CPU or one GPU."""

    name = "torch"

    def __init__(self, model: torch.nn.Module, optim: OptimSpec, device: str = "cpu") -> None:
        self.device = torch.device(device)
        self.model = model.to(self.device)
        self.model.train()
        self.spec = optim
        self.optimizer = make_optimizer(self.model, optim)
        self.scheduler = make_scheduler(self.optimizer, optim)
        self.schedule = self.scheduler.lr_lambdas[0]

    @property
    def module(self) -> torch.nn.Module:
        return self.model

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        return logits_of(self.model, input_ids, attention_mask)

    def lm_loss(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return lm_loss_of(self.model, input_ids, attention_mask, labels)

    def backward(self, loss: torch.Tensor) -> None:
        loss.backward()

    def step(self) -> float:
        """Clip, apply, advance the LR schedule, zero grads; returns the pre-clip grad norm."""
        params = [p for p in self.model.parameters() if p.requires_grad]
        if self.spec.max_grad_norm > 0:
            norm = torch.nn.utils.clip_grad_norm_(params, self.spec.max_grad_norm, foreach=False)
        else:
            grads = [p.grad.norm() for p in params if p.grad is not None]
            norm = torch.norm(torch.stack(grads)) if grads else torch.tensor(0.0)
        self.optimizer.step()
        self.scheduler.step()
        self.optimizer.zero_grad(set_to_none=True)
        return float(norm)

    def skip(self) -> None:
        self.scheduler.skip()

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
