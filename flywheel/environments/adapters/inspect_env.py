"""Inspect (`inspect_ai`) tasks as flywheel environments.

An Inspect task (a `@task` function, or the `Task` it returns) has a `dataset` of `Sample`s (`input`, `target`,
`id`, `choices`, `metadata`) and one or more `scorer`s. The adapter makes its samples the tasks of one domain
`inspect.<task name>` (Inspect tasks have no train/eval distinction, so one sample in five, chosen by content,
is held out) and runs its real scorers on a response: a `TaskState` as Inspect's `generate()` would leave it
(the user turn, then the response as the assistant turn and the `output`), then `score(state, target)`,
its value read with Inspect's own `value_to_float` (`C`/`I`, numbers, booleans). With several scorers the mean
is the score. Gold: the sample's first target. A task that declares an Inspect `sandbox` (its scorer runs code
in a container) is refused when loaded: flywheel runs model code only in its own sandbox.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from typing import Any

from flywheel.environments.adapters.dataset_env import DatasetEnvironment, verdict_of
from flywheel.environments.judging import text_to_judge
from flywheel.environments.task import Task
from flywheel.environments.verdict import Verdict

MODEL = "flywheel/policy"
"""The model name the scorer sees in its `TaskState`."""


def is_inspect_task(obj: Any) -> bool:
    return type(obj).__module__.startswith("inspect_ai") and type(obj).__name__ == "Task"


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return "\n".join(str(getattr(m, "text", None) or getattr(m, "content", "")) for m in value
                     if getattr(m, "role", "user") == "user")


class InspectEnvironment(DatasetEnvironment):
    """One Inspect task as one flywheel domain, `inspect.<name>`."""

    def __init__(self, task: Any, name: str | None = None) -> None:
        if not is_inspect_task(task):
            raise TypeError(f"not an Inspect Task: {type(task).__name__}")
        if getattr(task, "sandbox", None) is not None:
            raise TypeError(f"Inspect task {task.name!r} declares an Inspect sandbox ({task.sandbox}); flywheel runs "
                            "model code only in its own sandbox")
        self.task = task
        self.scorers = task.scorer if isinstance(task.scorer, list) else [task.scorer] if task.scorer else []
        if not self.scorers:
            raise TypeError(f"Inspect task {task.name!r} has no scorer")
        name = name or str(task.name)
        rows = []
        for i, s in enumerate(task.dataset):
            targets = s.target if isinstance(s.target, list) else [s.target]
            rows.append({"prompt": _text(s.input), "solution": str(targets[0]), "target": targets,
                         "sample_id": s.id if s.id is not None else i, "choices": s.choices,
                         "metadata": s.metadata or {}})
        digest = hashlib.sha256(json.dumps([r["prompt"] for r in rows]).encode()).hexdigest()[:8]
        super().__init__(name, "inspect", f"inspect-{name}-{task.version}-{digest}", f"inspect.{name}", rows, None)

    def score(self, task: Task, response: Any) -> Verdict:
        return asyncio.run(self._score(task, text_to_judge(response)))

    async def _score(self, task: Task, text: str) -> Verdict:
        from inspect_ai.model import ChatMessageAssistant, ChatMessageUser, ModelName, ModelOutput
        from inspect_ai.scorer import Target, value_to_float
        from inspect_ai.solver import TaskState

        ref = task.reference
        target = Target(ref.get("target") or [task.solution])
        to_float = value_to_float()
        values = []
        for scorer in self.scorers:
            state = TaskState(model=ModelName(MODEL), sample_id=ref.get("sample_id", task.task_id), epoch=1,
                              input=task.prompt,
                              messages=[ChatMessageUser(content=task.prompt), ChatMessageAssistant(content=text)],
                              target=target, choices=ref.get("choices"), output=ModelOutput.from_content(MODEL, text),
                              metadata=dict(ref.get("metadata") or {}))
            score = await scorer(state, target)
            values.append((to_float(score.value), score.explanation or str(score.value)))
        mean = sum(v for v, _ in values) / len(values)
        return verdict_of(mean, "inspect scorer: " + "; ".join(str(e)[:120] for _, e in values),
                          self.partial_credit, scores=[v for v, _ in values])
