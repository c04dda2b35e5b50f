"""The trainer's configuration: one frozen dataclass, each field with `help` (TRL style).

Frozen after construction (verl): a run's config cannot drift mid-run, and the whole
object is logged as MLflow params. `GRPOConfig.replace(**kw)` makes a changed copy.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any


def _f(default: Any, help: str, **kw: Any) -> Any:  # noqa: A002 - TRL's field name
    if isinstance(default, (dict, list)):
        return field(default_factory=lambda d=default: type(d)(d), metadata={"help": help}, **kw)
    return field(default=default, metadata={"help": help}, **kw)


@dataclass(frozen=True)
class GRPOConfig:
    """What one RLVR training run does. Where it runs (device, backend) is also here so it is logged."""

    # run
    seed: int = _f(0, "Seed for task sampling, generation and init; same seed + same data = same weights.")
    steps: int = _f(20, "Number of policy updates.")
    # batch
    prompts_per_step: int = _f(8, "Groups (distinct tasks) per update after dynamic sampling.")
    group_size: int = _f(8, "Responses sampled per task; GRPO normalizes rewards within this group.")
    micro_batch_size: int = _f(16, "Rollouts per forward/backward; the step accumulates gradients over micro-batches.")
    # optimizer
    lr: float = _f(3e-4, "AdamW learning rate (a few-million-parameter model wants 1e-4..1e-3).")
    weight_decay: float = _f(0.0, "AdamW weight decay.")
    adam_betas: tuple[float, float] = _f((0.9, 0.99), "AdamW betas.")
    warmup_steps: int = _f(0, "Linear LR warmup steps.")
    lr_schedule: str = _f("constant", "LR schedule after warmup: constant | cosine.")
    max_grad_norm: float = _f(1.0, "Gradient clipping by global norm (0 disables).")
    # loss
    advantage: str = _f("grpo", "Advantage estimator: grpo (mean/std per group) | dr_grpo (mean only).")
    clip_low: float = _f(0.2, "PPO ratio clip below: ratio >= 1 - clip_low.")
    clip_high: float = _f(0.28, "PPO ratio clip above (DAPO clip-higher): ratio <= 1 + clip_high.")
    kl_coef: float = _f(0.0, "Weight of the k3 KL penalty to a frozen reference policy (0 = no reference kept).")
    loss_agg: str = _f("token-mean", "Loss aggregation: token-mean (DAPO) | seq-mean-token-mean (GRPO paper).")
    ppo_epochs: int = _f(1, "Optimizer passes over each batch (1 = on-policy GRPO; >1 exercises the clip).")
    # sampling
    temperature: float = _f(1.0, "Sampling temperature (the loss uses the same tempered distribution).")
    top_p: float = _f(1.0, "Nucleus sampling (1.0 = off; < 1 biases log-probs, keep 1.0 for RL).")
    max_new_tokens: int = _f(80, "Longest response in tokens (the tiny model's math scratchpad needs up to ~60).")
    max_tool_steps: int = _f(6, "Most tool calls in one agent rollout.")
    # scheduler
    domain_weights: dict[str, float] = _f({"math": 1.0}, "Sampling weight of each domain (normalized).")
    target_pass_rate: float = _f(0.5, "Difficulty sampling prefers tasks whose running pass rate is near this.")
    difficulty_sharpness: float = _f(4.0, "How strongly sampling prefers the target (0 = uniform).")
    min_task_weight: float = _f(0.05, "Floor on a task's sampling weight so solved/unsolved tasks are revisited.")
    pass_rate_prior: float = _f(0.5, "Pass rate assumed for a task never attempted.")
    adaptive_prior: bool = _f(True, "Unseen tasks start at their domain's observed pass rate instead of pass_rate_prior.")
    pass_rate_momentum: float = _f(0.5, "EMA weight of the old pass rate when a group's result arrives.")
    dynamic_sampling: bool = _f(True, "Drop groups whose rewards are all equal and refill the batch (DAPO).")
    max_refill_rounds: int = _f(3, "Extra generation rounds to refill dropped groups before updating anyway.")
    # pipelining
    off_policy_pipeline: bool = _f(False, "Generate step k+1 in a thread while step k updates.")
    max_staleness: int = _f(1, "Most policy versions a rollout may lag the policy it updates.")
    # infrastructure
    backend: str = _f("torch", "Update backend: torch | deepspeed.")
    zero_stage: int = _f(0, "DeepSpeed ZeRO stage (0-3) for the deepspeed backend.")
    device: str = _f("auto", "auto | cpu | cuda.")
    checkpoint_every: int = _f(0, "Checkpoint every N steps (0 = only at the end).")
    num_threads: int = _f(0, "torch intra-op threads (0 = leave torch's default).")

    def __post_init__(self) -> None:
        if self.group_size < 2:
            raise ValueError("group_size must be >= 2: GRPO compares responses within a group")
        if self.prompts_per_step < 1 or self.steps < 0 or self.micro_batch_size < 1:
            raise ValueError("prompts_per_step, micro_batch_size must be >= 1 and steps >= 0")
        if self.backend not in ("torch", "deepspeed"):
            raise ValueError(f"backend must be torch or deepspeed, got {self.backend!r}")
        if self.loss_agg not in ("token-mean", "seq-mean-token-mean"):
            raise ValueError(f"unknown loss_agg {self.loss_agg!r}")
        if self.lr_schedule not in ("constant", "cosine"):
            raise ValueError(f"unknown lr_schedule {self.lr_schedule!r}")
        if not self.domain_weights or any(w < 0 for w in self.domain_weights.values()):
            raise ValueError("domain_weights must be a non-empty mapping of non-negative weights")
        if sum(self.domain_weights.values()) <= 0:
            raise ValueError("domain_weights must not all be zero")
        if self.max_staleness < 1 and self.off_policy_pipeline:
            raise ValueError("off_policy_pipeline needs max_staleness >= 1")
        if self.temperature <= 0:
            raise ValueError("temperature must be > 0 for RL sampling")

    def replace(self, **changes: Any) -> GRPOConfig:
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def to_params(self) -> dict[str, str]:
        """Flat string params for MLflow (`cfg.<name>`)."""
        out = {}
        for k, v in self.to_dict().items():
            out[f"cfg.{k}"] = json.dumps(v, sort_keys=True) if isinstance(v, (dict, list, tuple)) else str(v)
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> GRPOConfig:
        names = {f.name for f in dataclasses.fields(cls)}
        kw = {k: v for k, v in d.items() if k in names}
        if "adam_betas" in kw:
            kw["adam_betas"] = tuple(kw["adam_betas"])
        return cls(**kw)

    @classmethod
    def help(cls) -> dict[str, str]:
        return {f.name: f.metadata.get("help", "") for f in dataclasses.fields(cls)}
