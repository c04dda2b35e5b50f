"""The one optimizer and LR scheduler both training stages (and the base model's SFT) use.

A stage's config says its values (`OptimSpec`: RFT's and SFT's betas are not GRPO's); the code
that turns them into an AdamW and the warmup-then-cosine schedule is written once, here, so the
torch and DeepSpeed backends apply identical math to RFT, GRPO and the base-model build.
"""

from __future__ import annotations

import warnings

import torch

from flywheel.train.common.schedule import LRSchedule, OptimSpec


class ScheduledLR(torch.optim.lr_scheduler.LambdaLR):
    """`LambdaLR` over one `LRSchedule`, taking each LR from `LRSchedule.lr` (same state dict as LambdaLR)."""

    def __init__(self, optimizer: torch.optim.Optimizer, schedule: LRSchedule) -> None:
        super().__init__(optimizer, schedule)

    def get_lr(self) -> list[float]:  # type: ignore[override]
        return [sched.lr(base, self.last_epoch) for sched, base in zip(self.lr_lambdas, self.base_lrs, strict=True)]

    def skip(self) -> None:
        """Advance one step without an optimizer update (a step with nothing to learn from still counts
        toward the horizon the schedule decays over); torch's warning about that order is expected here."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            self.step()


def make_optimizer(model: torch.nn.Module, spec: OptimSpec) -> torch.optim.Optimizer:
    """AdamW over the trainable parameters."""
    params = [p for p in model.parameters() if p.requires_grad]
    # foreach=False: the single-tensor path gives bitwise-identical updates across resume
    return torch.optim.AdamW(params, lr=spec.lr, betas=tuple(spec.betas), weight_decay=spec.weight_decay, eps=1e-8,
                             foreach=False)


def make_scheduler(optimizer: torch.optim.Optimizer, spec: OptimSpec) -> ScheduledLR:
    return ScheduledLR(optimizer, spec.schedule())
