"""A task: what a model is asked, and what a verifier needs to judge the answer."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Task:
    """One task of a suite.

    `reference` holds what a verifier needs (math: `answer`; code: `entry_point`, `test`;
    agent: `tools`, `initial_state`, `goal`). `solution` is a gold response in the text
    format the models are trained on: it must score 1.0 under the task's verifier.
    """

    task_id: str
    domain: str
    prompt: str
    reference: dict[str, Any]
    solution: str
    meta: dict[str, Any] = field(default_factory=dict)

    def verifier_task(self) -> dict[str, Any]:
        """The design's task dict handed to verifiers (`flywheel verify` lines use it); for a domain of an
        installed environment, `{"task_id", "prompt", **reference}`."""
        if self.domain == "math":
            return {"task_id": self.task_id, "prompt": self.prompt, "answer": self.reference["answer"]}
        if self.domain == "code":
            return {
                "task_id": self.task_id,
                "prompt": self.prompt,
                "entry_point": self.reference["entry_point"],
                "test": self.reference["test"],
            }
        if self.domain == "agent":
            return {
                "task_id": self.task_id,
                "prompt": self.prompt,
                "tools": self.reference["tools"],
                "initial_state": self.reference["initial_state"],
                "goal": self.reference["goal"],
            }
        # an environment's domain: the reference is the task (`flywheel.environments.base.task_from_dict` inverts it)
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
