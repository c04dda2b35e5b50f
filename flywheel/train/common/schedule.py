"""An update's optimizer values and its LR schedule, light to import (no torch): the stage configs build
an `OptimSpec`, `flywheel.train.common.optim` turns it into torch objects.

One warmup-then-cosine schedule, written once, for RFT, GRPO and the base model's SFT.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class OptimSpec:
    """An update's optimizer and schedule values; no defaults: each stage's config declares its own."""

    lr: float
    betas: tuple[float, float]
    weight_decay: float
    max_grad_norm: float  # 0 disables clipping
    warmup_steps: int
    cosine: bool  # after warmup: cosine decay to 10% at `horizon`, else constant
    horizon: int

    def schedule(self) -> LRSchedule:
        return LRSchedule(self.warmup_steps, self.cosine, self.horizon)


class LRSchedule:
    """Linear warmup, then constant or cosine decay to 10% at `horizon` (a LambdaLR multiplier).

    A callable object, not a closure: `LambdaLR.state_dict` saves its `__dict__`, so a resumed
    run restores the horizon with the optimizer state, and the trainer can move the horizon.
    """

    def __init__(self, warmup_steps: int, cosine: bool, horizon: int) -> None:
        self.warmup_steps, self.cosine, self.horizon = int(warmup_steps), bool(cosine), int(horizon)

    def __call__(self, step: int) -> float:
        if self.warmup_steps and step < self.warmup_steps:
            return (step + 1) / self.warmup_steps
        if self.cosine and self.horizon > self.warmup_steps:
            frac = (step - self.warmup_steps) / max(1, self.horizon - self.warmup_steps)
            return 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, frac)))
        return 1.0

    def lr(self, peak: float, step: int) -> float:
        """The learning rate at `step`: `peak * (step + 1) / warmup` in warmup (that order of operations,
        which the base model's SFT always used, so its builds stay bitwise), else `peak * self(step)`."""
        if self.warmup_steps and step < self.warmup_steps:
            return peak * (step + 1) / self.warmup_steps
        return peak * self(step)
