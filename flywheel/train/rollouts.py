"""The trainer's side of rollouts: the generator's copy of the policy, prompts, and scoring.

`PolicyGenerator.generate(tasks, n, sampling)` returns `n` rollouts per task with their
sampling log-probs, through the torch rollout engine (`flywheel.rollout.torch_engine`,
multi-step tool rollouts for agent tasks).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any

import torch

from flywheel.rollout.types import Rollout, SamplingParams
from flywheel.tasks.base import Task
from flywheel.verifiers.verdict import Verdict

ScoreFn = Callable[[str, dict, str], Verdict]


def default_score_fn() -> ScoreFn:
    """The verifiers' entry point `score(domain, task, response) -> Verdict`.

    Until `flywheel.verifiers.score` exists, an adapter over the tiny model's build-time
    check (`flywheel.models.scoring`: same pass/fail meaning, reward 1.0 or 0.0).
    """
    try:
        from flywheel.verifiers import score  # type: ignore[attr-defined]

        return score
    except ImportError:
        pass
    from types import SimpleNamespace

    from flywheel.models.scoring import score as check

    def score_fallback(domain: str, task: dict, response: str) -> Verdict:
        ok = bool(check(SimpleNamespace(domain=domain, reference=task), response))
        return Verdict(1.0 if ok else 0.0, ok, "passed" if ok else "failed", {"judge": "models.scoring"})

    return score_fallback


def render_prompt(task: Task) -> str:
    """The chat-templated prompt the base model was trained on (the one template, from models.chat)."""
    from flywheel.models.chat import render_prompt as _render

    return _render(task.domain, task.prompt)


def tool_factory(task: Task) -> Any:
    """A fresh tool environment per sample for agent tasks; None for single-turn domains."""
    if task.domain != "agent":
        return None
    from flywheel.rollout.multistep import inventory_tools

    return inventory_tools(task.reference)


class PolicyGenerator:
    """The trainer's rollout engine, over the policy's weights.

    `shared=True` samples from the trainer's own module (synchronous mode: no copy, no
    sync). The one-step-off-policy pipeline needs its own copy, since the trainer updates
    while it samples; `sync` then pushes the new weights in place (no disk round trip).
    """

    def __init__(self, model: torch.nn.Module, tokenizer: Any, device: str | torch.device = "cpu", shared: bool = True) -> None:
        from flywheel.rollout.torch_engine import TorchEngine

        self.shared = shared
        gen_model = model if shared else copy.deepcopy(model)
        self.engine = TorchEngine(gen_model, tokenizer, device=device)
        self.version = 0

    def sync(self, module: torch.nn.Module, version: int) -> None:
        if self.shared:
            self.engine.policy_version = int(version)
        else:
            self.engine.update_weights(module.state_dict(), version)
        self.version = int(version)

    def generate(self, tasks: Sequence[Task], n: int, sampling: SamplingParams, max_tool_steps: int = 6) -> list[list[Rollout]]:
        """`n` rollouts per task, grouped per task, in task order."""
        prompts = [render_prompt(t) for t in tasks]
        tools = [tool_factory(t) for t in tasks]
        flat = self.engine.generate(
            prompts, n_samples=n, sampling=sampling,
            tools=tools if any(t is not None for t in tools) else None, max_steps=max_tool_steps,
        )
        out: list[list[Rollout]] = []
        for i, task in enumerate(tasks):
            group = flat[i * n : (i + 1) * n]
            for r in group:
                r.task_id, r.domain, r.group_id = task.task_id, task.domain, i
            out.append(group)
        return out


def score_groups(groups: list[list[Rollout]], tasks: Sequence[Task], score_fn: ScoreFn) -> None:
    """Attach a verdict to every rollout (verifiers never raise on model output; infra errors propagate)."""
    for task, group in zip(tasks, groups, strict=True):
        vt = task.verifier_task()
        for r in group:
            r.verdict = score_fn(task.domain, vt, r.text)
