"""Early stopping and the best checkpoint: a dev split from the train side, scored every `dev_every` steps.

The dev split (`flywheel.train.common.taskset.dev_split`) is `dev_tasks_per_domain` tasks of each weighted domain from its
train suite drawn with its own seed (`DEV_SEED`), minus every task the run trains on: never a
held-out prompt, never a training prompt. `DevTracker` scores it with the run's verifiers at
`dev_temperature` (greedy by default) at step 0, every `dev_every` steps and at the end. The
dev score is the unweighted mean of the per-domain pass rates, so a domain the run forgets
(code collapsing while math rises) pulls it down however small its sampling weight. The
best score's weights become the run's policy (the trainer saves them when `observe` says so;
on a tie the later, longer-trained weights win), and `patience` scores in a row without a
strictly better one end the run.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from flywheel.rollout.types import SamplingParams
from flywheel.tasks.base import Task
from flywheel.train.common.rollouts import PolicyGenerator, ScoreFn, score_groups
from flywheel.train.config import TrainConfig


class DevTracker:
    """Scores the dev split and keeps track of the best score, its step, and the scores since."""

    def __init__(self, cfg: TrainConfig, tasks: Sequence[Task], generator: PolicyGenerator, score_fn: ScoreFn) -> None:
        self.cfg, self.tasks, self.generator, self.score_fn = cfg, list(tasks), generator, score_fn
        self.domains = sorted({t.domain for t in self.tasks})
        self.best_score: float | None = None
        self.best_step: int | None = None
        self.since_best = 0
        self.scores: list[tuple[int, float]] = []

    @property
    def enabled(self) -> bool:
        return self.cfg.dev_every > 0 and bool(self.tasks)

    def due(self, done: int, end: int) -> bool:
        """Score after `done` steps: at 0, every `dev_every` steps, and at the run's last step."""
        return self.enabled and (done % self.cfg.dev_every == 0 or done == end)

    def evaluate(self) -> dict[str, float]:
        """`dev/score` and `dev/<domain>` (pass rate over `dev_samples` responses per task) of the policy now."""
        sampling = SamplingParams(temperature=self.cfg.dev_temperature, top_p=1.0,
                                  max_new_tokens=self.cfg.max_new_tokens, seed=self.cfg.seed + 7)
        groups = self.generator.generate(self.tasks, self.cfg.dev_samples, sampling, self.cfg.max_tool_steps)
        score_groups(groups, self.tasks, self.score_fn)
        per: dict[str, list[bool]] = {d: [] for d in self.domains}
        for task, group in zip(self.tasks, groups, strict=True):
            per[task.domain].extend(bool(r.verdict and r.verdict.passed) for r in group)
        out = {f"dev/{d}": sum(v) / len(v) for d, v in per.items() if v}
        out["dev/score"] = sum(out.values()) / len(out)
        return out

    def observe(self, step: int, score: float) -> bool:
        """Record `score` after `step` steps; True when these weights are the new best (>= the best so far)."""
        self.scores.append((step, score))
        if self.best_score is not None and score <= self.best_score:
            self.since_best += 1
            if score < self.best_score:
                return False
        else:
            self.since_best = 0
        self.best_score, self.best_step = score, step
        return True

    def should_stop(self) -> bool:
        return self.cfg.patience > 0 and self.since_best >= self.cfg.patience

    def state_dict(self) -> dict[str, Any]:
        return {"best_score": self.best_score, "best_step": self.best_step, "since_best": self.since_best,
                "scores": [list(s) for s in self.scores]}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.best_score, self.best_step = state.get("best_score"), state.get("best_step")
        self.since_best = int(state.get("since_best", 0))
        self.scores = [(int(s), float(v)) for s, v in state.get("scores", [])]
