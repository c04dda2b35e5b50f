"""What the ecosystem adapters share: an environment over a fixed list of rows (a dataset), one domain, whose
rows become tasks per split and whose scorer is someone else's code.

Splits: the package's own evaluation set (when it has one) is `heldout` and the rest `train`, with any train
row whose prompt also appears in the evaluation set dropped (the splits never share a task); with no
evaluation set one row in five, chosen by content (`is_heldout`), is held out. `tasks(..., seed)` shuffles with
the seed, so the same arguments give the same tasks. Validation: the row's gold answer must pass, and the
generic probes (empty, the prompt echoed, a list of every small number) must fail.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from flywheel.environments.base import BaseEnvironment, check_split, is_heldout, task_from_dict
from flywheel.environments.task import Task
from flywheel.environments.verdict import TaskError, Verdict, passed

MANY_NUMBERS = " ".join(str(i) for i in range(1000))
"""A hack probe: a scorer that looks for the answer anywhere in the text passes it for any small number."""


def verdict_of(score: float, reason: str, partial_credit: bool = False, **details: Any) -> Verdict:
    """A verdict from a foreign score (kept in `details["score"]`): a pass is 1.0 (flywheel's contract); below it
    0, or with `partial_credit` the score kept under 1 (then a probe earning a format reward fails validation,
    which asks 0 of it)."""
    if score >= 1.0:
        return passed(reason, score=score, **details)
    return Verdict(max(0.0, min(score, 0.999)) if partial_credit else 0.0, False, reason, {"score": score, **details})


class DatasetEnvironment(BaseEnvironment):
    """One domain over `rows` (dicts with at least `prompt` and `solution`); subclasses implement `score`."""

    partial_credit = False
    """Below a pass the reward is 0 (True: the foreign score, kept under 1); see `verdict_of`."""

    def __init__(self, name: str, family: str, version: str, domain: str, train_rows: list[dict[str, Any]],
                 eval_rows: list[dict[str, Any]] | None) -> None:
        self.name, self.family, self.version, self.domain = name, family, version, domain
        held = {r["prompt"] for r in eval_rows or []}
        if eval_rows:
            self._splits = {"train": [r for r in train_rows if r["prompt"] not in held], "heldout": list(eval_rows)}
        else:
            self._splits = {"train": [r for r in train_rows if not is_heldout(r["prompt"])],
                            "heldout": [r for r in train_rows if is_heldout(r["prompt"])]}
        self._tasks = {s: [self._task(r) for r in rows] for s, rows in self._splits.items()}

    def _task(self, row: dict[str, Any]) -> Task:
        ref = {k: v for k, v in row.items() if k not in ("prompt", "solution")}
        tid = f"{self.domain}-" + hashlib.sha1(row["prompt"].encode()).hexdigest()[:12]
        return Task(tid, self.domain, row["prompt"], ref, row["solution"], {})

    def domains(self) -> list[str]:
        return [self.domain]

    def tasks(self, domain: str, split: str, n: int, seed: int, level: int | None = None) -> list[Task]:
        check_split(split)
        pool = list(self._tasks[split])
        random.Random(seed).shuffle(pool)
        return pool[:n]

    def task_count(self, domain: str, split: str) -> int | None:
        check_split(split)
        return len(self._tasks[split])

    def heldout_size(self, domain: str) -> int:
        return min(50, len(self._tasks["heldout"])) or 1

    def hack_probes(self, task: Task) -> list[tuple[str, Any]]:
        return [("echo_prompt", task.prompt), ("many_numbers", MANY_NUMBERS)]

    def verify(self, task: Task | dict[str, Any], response: Any) -> Verdict:
        t = task if isinstance(task, Task) else task_from_dict(self.domain, task)
        if not t.prompt:
            raise TaskError("task has no prompt")
        return self.score(t, response)

    def score(self, task: Task, response: Any) -> Verdict:
        raise NotImplementedError
