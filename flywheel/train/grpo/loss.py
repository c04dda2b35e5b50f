"""GRPO's pure math: advantages, the clipped policy loss, the KL penalty. Tensors in, tensors out.

verl-style: every function here is stateless, works on CPU tensors, and is tested on its
own. The trainer only wires them together. Shapes: `[B, T]` for per-token tensors
(B = rollouts, T = padded response length), `[B]` for per-rollout tensors.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch

from flywheel.verifiers.verdict import VerifierInfraError

ADVANTAGE_ESTIMATORS: dict[str, Callable[..., torch.Tensor]] = {}
"""Registered advantage estimators by name (verl's registry pattern): `fn(rewards, group_ids, **kw) -> [B]`."""


def register_advantage(name: str) -> Callable[[Callable[..., torch.Tensor]], Callable[..., torch.Tensor]]:
    def deco(fn: Callable[..., torch.Tensor]) -> Callable[..., torch.Tensor]:
        ADVANTAGE_ESTIMATORS[name] = fn
        return fn

    return deco


def check_finite_rewards(rewards: torch.Tensor) -> None:
    """A NaN or infinite reward is an infrastructure error, never a training signal."""
    if not bool(torch.isfinite(rewards).all()):
        bad = rewards[~torch.isfinite(rewards)].tolist()
        raise VerifierInfraError(f"non-finite rewards in batch: {bad[:5]}")


@register_advantage("grpo")
def grpo_advantages(
    rewards: torch.Tensor, group_ids: torch.Tensor, eps: float = 1e-6, scale_by_std: bool = True
) -> torch.Tensor:
    """Group-normalized advantages: (r - mean(group)) / (std(group) + eps).

    `scale_by_std=False` is Dr. GRPO's unbiased variant (only the mean is removed). A group
    whose rewards are all equal gets advantage 0 everywhere (no signal, no NaN).
    """
    check_finite_rewards(rewards)
    rewards = rewards.to(torch.float32)
    _, inverse = torch.unique(group_ids, return_inverse=True)
    n_groups = int(inverse.max().item()) + 1 if inverse.numel() else 0
    counts = torch.zeros(n_groups).index_add_(0, inverse, torch.ones_like(rewards))
    sums = torch.zeros(n_groups).index_add_(0, inverse, rewards)
    mean = sums / counts
    centered = rewards - mean[inverse]
    if not scale_by_std:
        return centered
    sq = torch.zeros(n_groups).index_add_(0, inverse, centered**2)
    # unbiased std like torch.std (verl/TRL); a group of one has std 0 -> advantage 0.
    std = torch.sqrt(sq / (counts - 1).clamp(min=1))
    return centered / (std[inverse] + eps)


@register_advantage("dr_grpo")
def dr_grpo_advantages(rewards: torch.Tensor, group_ids: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    return grpo_advantages(rewards, group_ids, eps=eps, scale_by_std=False)


def kl_k3(logprobs: torch.Tensor, ref_logprobs: torch.Tensor) -> torch.Tensor:
    """Schulman's k3 estimator of KL(pi || ref) per token: exp(ref - logp) - (ref - logp) - 1 >= 0."""
    log_ratio = (ref_logprobs - logprobs).clamp(-20.0, 20.0)
    return torch.exp(log_ratio) - log_ratio - 1.0


def masked_sum(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return (x * mask).sum()


def masked_mean(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return (x * mask).sum() / mask.sum().clamp(min=1.0)


def aggregate(per_token: torch.Tensor, mask: torch.Tensor, mode: str, normalizer: float | None = None) -> torch.Tensor:
    """Reduce a `[B, T]` per-token loss to a scalar.

    `token-mean` (DAPO): sum over all valid tokens / number of valid tokens, so long
    responses weigh per token, not per sequence. With gradient accumulation pass the
    whole step's token count as `normalizer` so micro-batches add up to the full-batch
    loss exactly. `seq-mean-token-mean` (original GRPO): mean per sequence, then over
    sequences (`normalizer` = the step's number of sequences).
    """
    mask = mask.to(per_token.dtype)
    if mode == "token-mean":
        denom = normalizer if normalizer is not None else mask.sum().clamp(min=1.0)
        return masked_sum(per_token, mask) / denom
    if mode == "seq-mean-token-mean":
        per_seq = (per_token * mask).sum(-1) / mask.sum(-1).clamp(min=1.0)
        denom = normalizer if normalizer is not None else max(per_token.shape[0], 1)
        return per_seq.sum() / denom
    raise ValueError(f"unknown loss aggregation {mode!r}")


@dataclass
class LossStats:
    """Detached per-batch statistics of one loss evaluation (sums, so micro-batches add up)."""

    tokens: float
    clipped_tokens: float
    kl_sum: float
    ratio_sum: float

    def merge(self, other: LossStats) -> LossStats:
        return LossStats(*(a + b for a, b in zip(self.astuple(), other.astuple(), strict=True)))

    def astuple(self) -> tuple[float, float, float, float]:
        return (self.tokens, self.clipped_tokens, self.kl_sum, self.ratio_sum)


def policy_loss(
    logprobs: torch.Tensor,
    old_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    clip_low: float = 0.2,
    clip_high: float = 0.28,
    ref_logprobs: torch.Tensor | None = None,
    kl_coef: float = 0.0,
    agg: str = "token-mean",
    normalizer: float | None = None,
) -> tuple[torch.Tensor, LossStats]:
    """PPO-clip surrogate with GRPO advantages and an optional k3 KL penalty.

    logprobs: `[B, T]` under the policy being trained (requires grad); old_logprobs: `[B, T]`
    under the policy that sampled the tokens; advantages: `[B]` (broadcast over tokens) or
    `[B, T]`; mask: `[B, T]`, 1 on tokens the model generated (0 on padding and on tool
    results spliced in by the environment). Clip range is asymmetric (DAPO "clip-higher").
    """
    if logprobs.shape != old_logprobs.shape or logprobs.shape != mask.shape:
        raise ValueError(f"shape mismatch: {tuple(logprobs.shape)} {tuple(old_logprobs.shape)} {tuple(mask.shape)}")
    mask = mask.to(logprobs.dtype)
    adv = advantages.unsqueeze(-1) if advantages.dim() == 1 else advantages
    adv = adv.to(logprobs.dtype)
    log_ratio = (logprobs - old_logprobs).clamp(-20.0, 20.0)
    ratio = torch.exp(log_ratio)
    unclipped = ratio * adv
    clipped = torch.clamp(ratio, 1.0 - clip_low, 1.0 + clip_high) * adv
    per_token = -torch.minimum(unclipped, clipped)
    kl = torch.zeros_like(per_token)
    if ref_logprobs is not None:
        kl = kl_k3(logprobs, ref_logprobs)
        if kl_coef:
            per_token = per_token + kl_coef * kl
    loss = aggregate(per_token, mask, agg, normalizer)
    with torch.no_grad():
        is_clipped = (clipped < unclipped).to(mask.dtype)  # the clip bound is the active branch
        stats = LossStats(
            tokens=float(mask.sum()),
            clipped_tokens=float(masked_sum(is_clipped, mask)),
            kl_sum=float(masked_sum(kl.detach(), mask)),
            ratio_sum=float(masked_sum(ratio.detach(), mask)),
        )
    return loss, stats


def token_logprobs(logits: torch.Tensor, targets: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
    """log p(target) per position from `[B, T, V]` logits, without materializing a full log-softmax copy twice.

    The temperature must match the sampler's, or the ratio against sampling log-probs is biased.
    """
    logits = logits.float()
    if temperature != 1.0:
        logits = logits / temperature
    return torch.gather(logits, -1, targets.unsqueeze(-1)).squeeze(-1) - torch.logsumexp(logits, dim=-1)


def entropy_from_logits(logits: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
    """Per-position entropy of the (tempered) sampling distribution, `[B, T]`."""
    logits = logits.float()
    if temperature != 1.0:
        logits = logits / temperature
    logp = torch.log_softmax(logits, dim=-1)
    return -(logp.exp() * logp).sum(-1)


def groups_with_signal(rewards: list[float], tol: float = 1e-9) -> bool:
    """Whether a group's rewards differ (all-equal groups carry zero GRPO advantage)."""
    if not rewards:
        return False
    for r in rewards:
        if not math.isfinite(r):
            raise VerifierInfraError(f"non-finite reward {r!r}")
    return max(rewards) - min(rewards) > tol
