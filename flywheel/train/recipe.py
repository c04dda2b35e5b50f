"""The measured RLVR recipe for the tiny model: one place for the defaults the turn, the CLI and the
learning proof share, so a scheduled run trains the way the proof showed to work.

Found by the sweep in docs/training.md: a 393k-parameter policy is destroyed by lr >= 1e-3 within
10-20 steps and regresses held-out math at 5e-4 (measured: -10 points after 60 steps on the mined
pool); 2e-4 with a cosine decay and mean-only (Dr. GRPO) advantages gains +20.5 math points in
360 steps. Real checkpoints (Qwen, Llama) want their own values: every field is overridable.
"""

from __future__ import annotations

from typing import Any

TINY_RLVR: dict[str, Any] = {
    "steps": 120,
    "prompts_per_step": 8,
    "group_size": 8,
    "lr": 2e-4,
    "lr_schedule": "cosine",
    "advantage": "dr_grpo",
    "temperature": 1.0,
    "max_new_tokens": 80,
    "max_refill_rounds": 1,
    "micro_batch_size": 32,
}
"""GRPOConfig fields of the recipe (`steps` is the turn's; the learning proof runs 360)."""

MATH_WEIGHT = 0.9
"""Share of math groups; code and agent split the rest so they are not forgotten."""


def domain_weights(domains: tuple[str, ...] | list[str] = ("math", "code", "agent"),
                   math_weight: float = MATH_WEIGHT) -> dict[str, float]:
    """`math_weight` to math and the rest split evenly over the other domains (all equal without math)."""
    domains = list(domains)
    if "math" not in domains or len(domains) == 1:
        return {d: 1.0 for d in domains}
    rest = round((1.0 - math_weight) / (len(domains) - 1), 9)
    return {d: (math_weight if d == "math" else rest) for d in domains}
