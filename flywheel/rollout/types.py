"""The rollout record: what one sampled response carries from the engine to the trainer."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from flywheel.verifiers.verdict import Verdict


@dataclass(frozen=True)
class SamplingParams:
    """How to sample. Frozen: the same params and seed give the same tokens."""

    temperature: float = 1.0
    top_p: float = 1.0
    max_new_tokens: int = 64
    seed: int = 0
    stop: tuple[str, ...] = ()


@dataclass
class ToolStep:
    """One tool call of a multi-step rollout and what the environment answered."""

    call_text: str
    result_text: str
    error: str | None = None


@dataclass
class Rollout:
    """One sampled response to one prompt.

    `token_ids` are the sampled response tokens (tool results spliced in by the
    environment are included and marked 0 in `loss_mask`); `logprobs` are their
    log-probabilities under the sampling policy (0.0 where the mask is 0).
    """

    prompt: str
    prompt_ids: list[int]
    token_ids: list[int]
    logprobs: list[float]
    loss_mask: list[int]
    text: str
    policy_version: int
    task_id: str = ""
    domain: str = ""
    group_id: int = 0
    steps: list[ToolStep] = field(default_factory=list)
    finish_reason: str = "stop"  # "stop" | "length" | "max_steps"
    verdict: Verdict | None = None
    meta: dict[str, Any] = field(default_factory=dict)
