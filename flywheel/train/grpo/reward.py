"""The RL reward: the verifier's binary verdict, or with partial credit for a failure (`TrainConfig.partial_credit`).

A verifier that can say how much of a failed task was right puts it in `details["item_share"]` (the agent
verifier: the share of the task's items at their goal, `flywheel.environments.agent.verifier.item_share`).
With partial credit a failed rollout's reward is `PARTIAL_WEIGHT` times that share, so any pass (reward 1)
still outranks any failure, and a GRPO group of failures has signal where some got further. Only the
reward changes: `passed` stays the verifier's, so evaluation, pass rates and the dev split stay binary.
"""

from __future__ import annotations

from typing import Any

from flywheel.verifiers.verdict import Verdict

PARTIAL_WEIGHT = 0.5
"""The most a failed rollout earns (all its items right but, say, never finished): half a pass."""


def credit(verdict: Verdict) -> Verdict:
    """`verdict` with a failure's reward set to its partial credit, in [0, PARTIAL_WEIGHT]."""
    share = verdict.details.get("item_share")
    if verdict.passed or not isinstance(share, (int, float)) or isinstance(share, bool):
        return verdict
    reward = PARTIAL_WEIGHT * min(1.0, max(0.0, float(share)))
    return Verdict(reward, False, verdict.reason, verdict.details)


class PartialCredit:
    """A `ScoreFn` (and its batch `many`) whose failed verdicts carry their partial credit as reward."""

    def __init__(self, score_fn: Any) -> None:
        self.inner = score_fn

    def __call__(self, domain: str, task: dict, response: str) -> Verdict:
        return credit(self.inner(domain, task, response))

    def many(self, items: list[tuple[str, dict, str]]) -> list[Verdict]:
        many = getattr(self.inner, "many", None)
        verdicts = many(items) if many else [self.inner(*it) for it in items]
        return [credit(v) for v in verdicts]


def reward_fn(score_fn: Any, partial_credit: bool) -> Any:
    """The score function a GRPO run rewards with: `score_fn` itself, or wrapped in `PartialCredit`."""
    return PartialCredit(score_fn) if partial_credit else score_fn
