"""The trainer's side of rollouts: the generator's copy of the policy, prompts, and scoring.

`PolicyGenerator.generate(tasks, n, sampling)` returns `n` rollouts per task with their
sampling log-probs, through the torch rollout engine (`flywheel.rollout.torch_engine`,
multi-step tool rollouts for agent tasks).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Sequence
from typing import Any

import torch

from flywheel.rollout import task_prompt, tool_factory
from flywheel.rollout.torch_engine import TorchEngine
from flywheel.rollout.types import Rollout, SamplingParams
from flywheel.tasks.base import Task
from flywheel.train.common.lora import adapter_state, is_lora
from flywheel.verifiers.batch import score_batch
from flywheel.verifiers.verdict import Verdict, VerifierInfraError

ScoreFn = Callable[[str, dict, str], Verdict]
# (policy module, tokenizer, device, shared) -> a generator with PolicyGenerator's methods:
# `engine.pad_id`, `version`, `sync(module, version)`, `generate(tasks, n, sampling, max_tool_steps)`
GeneratorFactory = Callable[..., Any]


class BatchScorer:
    """The verifiers' batch entry point as a `ScoreFn`, with `many` for a whole step's rollouts.

    Code responses run in the sandbox concurrently (`concurrency`); a judge failure raises
    `VerifierInfraError` (retried by the verifiers first), never a reward. A run-local memo
    skips re-judging a response already judged for the same task: a sharpening policy repeats
    itself a lot (`cache`, the warehouse's `VerdictCache`, persists across runs when given).
    """

    def __init__(self, concurrency: int = 4, cache: Any = None, memo_size: int = 200_000) -> None:
        self.concurrency, self.cache, self.memo_size = concurrency, cache, memo_size
        self.memo: dict[tuple[str, str, str], Verdict] = {}
        self.hits = 0

    def __call__(self, domain: str, task: dict, response: str) -> Verdict:
        return self.many([(domain, task, response)])[0]

    def many(self, items: list[tuple[str, dict, str]]) -> list[Verdict]:
        keys = [(d, json.dumps(t, sort_keys=True, default=str), r) for d, t, r in items]
        fresh: dict[tuple[str, str, str], int] = {}
        for i, k in enumerate(keys):
            if k not in self.memo:
                fresh.setdefault(k, i)
        judged: dict[tuple[str, str, str], Verdict] = {}
        verdicts = score_batch([items[i] for i in fresh.values()], concurrency=self.concurrency, cache=self.cache)
        for k, v in zip(fresh, verdicts, strict=True):
            if v is None:
                raise VerifierInfraError(f"no verdict for {k[0]} response")
            judged[k] = v
            if v.details.get("cacheable", True) and len(self.memo) < self.memo_size:
                self.memo[k] = v
        self.hits += len(keys) - len(fresh)
        return [judged[k] if k in judged else self.memo[k] for k in keys]


def default_score_fn() -> ScoreFn:
    """`score(domain, task, response) -> Verdict` from the verifiers (`flywheel.verifiers.batch`)."""
    return BatchScorer()


def render_prompt(task: Task, tokenizer: Any) -> str:
    """`task`'s prompt in the policy checkpoint's own chat template (`flywheel.rollout.task_prompt`)."""
    return task_prompt(tokenizer, task)


class PolicyGenerator:
    """The trainer's rollout engine, over the policy's weights.

    `shared=True` samples from the trainer's own module (synchronous mode: no copy, no
    sync). The one-step-off-policy pipeline needs its own copy, since the trainer updates
    while it samples; `sync` then pushes the new weights in place (no disk round trip).
    """

    def __init__(self, model: torch.nn.Module, tokenizer: Any, device: str | torch.device = "cpu", shared: bool = True) -> None:
        self.shared = shared
        gen_model = model if shared else copy.deepcopy(model)
        self.engine = TorchEngine(gen_model, tokenizer, device=device)
        self.version = 0

    def sync(self, module: torch.nn.Module, version: int) -> None:
        if self.shared:
            self.engine.policy_version = int(version)
        else:  # a LoRA policy sends its adapters alone: the base weights never change
            self.engine.update_weights(adapter_state(module) if is_lora(module) else module.state_dict(), version)
        self.version = int(version)

    def generate(self, tasks: Sequence[Task], n: int, sampling: SamplingParams, max_tool_steps: int = 6) -> list[list[Rollout]]:
        """`n` rollouts per task, grouped per task, in task order."""
        prompts = [render_prompt(t, self.engine.tokenizer) for t in tasks]
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
    items = [(task.domain, task.verifier_task(), r.text) for task, g in zip(tasks, groups, strict=True) for r in g]
    many = getattr(score_fn, "many", None)
    verdicts = many(items) if many else [score_fn(*it) for it in items]
    if len(verdicts) != len(items):
        raise VerifierInfraError(f"{len(items) - len(verdicts)} rollouts got no verdict")
    it = iter(verdicts)
    for g in groups:
        for r in g:
            r.verdict = next(it)
