"""What a training run produced (either stage): the record the CLI prints, the asset reads and MLflow keeps."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class TrainResult:
    """What a training run produced; `policy_dir` is an HF folder (`from_pretrained`-loadable)."""

    policy_dir: Path | None
    steps_done: int
    history: list[dict[str, float]]
    mlflow_run_id: str | None
    mlflow_run_url: str | None
    curve_png: Path | None
    idle_shares: dict[str, float]
    wall_s: float
    checkpoint_dir: Path
    cpu_s: float = 0.0
    manifest: dict[str, Any] = field(default_factory=dict)
    finished: bool = True
    model: Any = None
    stop_reason: str = "steps"  # steps | horizon | budget | early_stop | exhausted | stop_after
    horizon: int = 0
    dev_best: dict[str, Any] = field(default_factory=dict)  # {"step", "score", "scores"} when dev is on
    task_counts: dict[str, tuple[str, int, int]] = field(default_factory=dict)  # task -> (domain, attempts, passes)
    sources: dict[str, int] = field(default_factory=dict)  # tasks/<source>, samples/<source> sampled
    difficulty_rows: int = 0  # rows written back to difficulty_history (train_policy does)

    @property
    def sound(self) -> bool:
        """Finished, saved a policy, and every reward it recorded is finite (a NaN is an infrastructure fault)."""
        rewards = [h["reward/mean"] for h in self.history if "reward/mean" in h]
        return self.finished and self.policy_dir is not None and bool(rewards) and all(map(math.isfinite, rewards))

    @property
    def final_reward(self) -> float:
        """Mean reward of the last few steps (a single step is noisy)."""
        tail = [h["reward/mean"] for h in self.history[-3:] if "reward/mean" in h]
        return sum(tail) / len(tail) if tail else float("nan")

    def to_dict(self) -> dict[str, Any]:
        return {
            "policy_dir": str(self.policy_dir) if self.policy_dir else None,
            "steps_done": self.steps_done,
            "final_reward": self.final_reward,
            "mlflow_run_id": self.mlflow_run_id,
            "mlflow_run_url": self.mlflow_run_url,
            "curve_png": str(self.curve_png) if self.curve_png else None,
            "idle_shares": self.idle_shares,
            "wall_s": self.wall_s,
            "cpu_s": self.cpu_s,
            "finished": self.finished,
            "stop_reason": self.stop_reason,
            "horizon": self.horizon,
            "dev_best": self.dev_best,
            "sources": self.sources,
            "difficulty_rows": self.difficulty_rows,
            "reward_curve": [h.get("reward/mean") for h in self.history],
        }
