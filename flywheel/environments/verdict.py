"""The verdict every verifier returns, and the task error: what an environment's `verify` speaks in.

Part of the environment protocol (it sits below the verifier machinery in `flywheel.verifiers`, which
imports it back as `flywheel.environments.verdict`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any


class VerifierInfraError(RuntimeError):
    """The judge itself failed (sandbox down, non-finite reward): retry, never train on it."""


@dataclass(frozen=True)
class Verdict:
    """Whether a response solved its task.

    A verifier never raises on model output: a crash in the model's code is a failed
    verdict with its reason. `reward` is always finite.
    """

    reward: float
    passed: bool
    reason: str
    details: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.reward, (int, float)) or not math.isfinite(self.reward):
            raise VerifierInfraError(f"non-finite reward {self.reward!r}: {self.reason}")

    def to_dict(self) -> dict[str, Any]:
        return {"reward": float(self.reward), "passed": self.passed, "reason": self.reason, "details": self.details}


class TaskError(ValueError):
    """The task itself is unusable (missing field, unparseable reference): not the model's fault.

    Raised before any model output is looked at; `flywheel verify` turns it into an error verdict,
    verifier construction marks the verifier invalid.
    """


def passed(reason: str = "passed", **details: Any) -> Verdict:
    return Verdict(1.0, True, reason, details)


def failed(reason: str, **details: Any) -> Verdict:
    return Verdict(0.0, False, reason, details)
