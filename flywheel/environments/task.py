"""A task: what a model is asked, and what a verifier needs to judge the answer."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Task:
    """One task of a suite.

    `reference` holds what its environment's verifier needs (and may hold more: a canonical solution, the
    gold calls). `solution` is a gold response in the text
    format the models are trained on: it must score 1.0 under the task's verifier.
    """

    task_id: str
    domain: str
    prompt: str
    reference: dict[str, Any]
    solution: str
    meta: dict[str, Any] = field(default_factory=dict)

    def verifier_task(self) -> dict[str, Any]:
        """The design's task dict handed to verifiers (`flywheel verify` lines use it): what the environment
        serving the domain says (`Environment.verifier_task`); `{"task_id", "prompt", **reference}` for a
        domain no installed environment serves."""
        from flywheel.environments.registry import (
            default_environments,  # the registry builds environments over Task
        )

        envs = default_environments()
        if envs.has_domain(self.domain):
            return envs.for_domain(self.domain).verifier_task(self)
        return {**self.reference, "task_id": self.task_id, "prompt": self.prompt}

    def to_dict(self) -> dict[str, Any]:
        return {
            "task_id": self.task_id,
            "domain": self.domain,
            "prompt": self.prompt,
            "reference": self.reference,
            "solution": self.solution,
            "meta": self.meta,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Task:
        return cls(d["task_id"], d["domain"], d["prompt"], d["reference"], d["solution"], d.get("meta", {}))


def stable_task_id(domain: str, prompt: str) -> str:
    """Same prompt, same id, on every machine and run."""
    return f"{domain}-{hashlib.sha1(prompt.encode()).hexdigest()[:12]}"


def dumps(obj: Any) -> str:
    """Canonical JSON: sorted keys, no spaces, so equal content hashes equal."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
